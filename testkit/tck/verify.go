package tck

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/rxbulkhead/bulkhead/flowable"
)

// reporter is the part of *testing.T a check uses to report, so that the
// suite's own tests can check that a check fails on a broken publisher.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// check is one rule's check. It returns a non-empty reason if the rule
// does not apply to the publisher.
type check[T any] struct {
	rule Rule
	run  func(t *testing.T, r reporter, f Factory[T], o Options) (notApplicable string)
}

func checks[T any]() []check[T] {
	return []check[T]{
		{ruleDemand, check1_1[T]},
		{ruleSerialSignals, check1_3[T]},
		{ruleErrorSignalled, check1_4[T]},
		{ruleCompletionSignalled, check1_5[T]},
		{ruleNothingAfterTerminal, check1_7[T]},
		{ruleOnSubscribeFirst, check1_9[T]},
		{ruleNoNilArguments, check2_13[T]},
		{ruleBoundedRecursion, check3_3[T]},
		{ruleRequestAfterCancelIsNoop, check3_6[T]},
		{ruleCancelAfterCancelIsNoop, check3_7[T]},
		{ruleRequestAddsDemand, check3_8[T]},
		{ruleNonPositiveRequestFails, check3_9[T]},
		{ruleCancelDropsSubscriber, check3_13[T]},
		{ruleUnboundedDemand, check3_17[T]},
	}
}

// Result lists the rules VerifyPublisher checked.
type Result struct {
	Passed        []string // rule IDs whose check passed
	Failed        []string // rule IDs whose check failed
	NotApplicable []string // rule IDs skipped, with the reason: "3.9: ..."
}

// String renders the result on one line, for logs and reports.
func (r Result) String() string {
	s := "passed " + strings.Join(r.Passed, " ")
	if len(r.Failed) > 0 {
		s += "; FAILED " + strings.Join(r.Failed, " ")
	}
	if len(r.NotApplicable) > 0 {
		ids := make([]string, len(r.NotApplicable))
		for i, na := range r.NotApplicable {
			ids[i], _, _ = strings.Cut(na, ":")
		}
		s += "; not applicable " + strings.Join(ids, " ")
	}
	return s
}

// VerifyPublisher checks the publishers that factory makes against the
// Reactive Streams rules that Rules lists (1.1, 1.3, 1.4 or
// 1.5, 1.7, 1.9, 2.13, 3.3, 3.6, 3.7, 3.8, 3.9, 3.13, 3.17), one subtest
// per rule, named after it ("rule_1.1"); a failure message quotes the rule
// and shows the signals received. Each check runs in its own
// testing/synctest bubble with its own publishers (factory is called
// inside the bubble), so VerifyPublisher must not be called from within a
// bubble. A check that does not apply to publishers described by opts is
// skipped with the reason. It panics if factory is nil.
func VerifyPublisher[T any](t *testing.T, factory Factory[T], opts Options) Result {
	t.Helper()
	if factory == nil {
		panic("tck: VerifyPublisher called with a nil factory")
	}
	if opts.Elements < Infinite {
		panic(fmt.Sprintf("tck: Options: Elements must be >= 0 or Infinite, got %d", opts.Elements))
	}
	if opts.Elements == Infinite && opts.Terminal != Endless {
		panic(fmt.Sprintf("tck: Options: Elements Infinite needs Terminal Endless, got %v", opts.Terminal))
	}
	var res Result
	for _, c := range checks[T]() {
		var skipped string
		ok := t.Run(c.rule.Name(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				skipped = c.run(t, t, factory, opts)
			})
			if skipped != "" {
				t.Skipf("%s not applicable: %s", c.rule.Name(), skipped)
			}
		})
		switch {
		case skipped != "":
			res.NotApplicable = append(res.NotApplicable, c.rule.ID+": "+skipped)
		case ok:
			res.Passed = append(res.Passed, c.rule.ID)
		default:
			res.Failed = append(res.Failed, c.rule.ID)
		}
	}
	return res
}

// start makes a publisher and subscribes a new probe to it. If Subscribe
// panics, the panic is reported (rule 1.9: Subscribe MUST return
// normally) and ok is false.
func start[T any](t *testing.T, r reporter, f Factory[T], setup func(p *probe[T])) (rec *record, p *probe[T], ok bool) {
	rec = &record{}
	p = newProbe[T](rec)
	if setup != nil {
		setup(p)
	}
	pub := f(t)
	if pub == nil {
		r.Errorf("tck: the factory returned a nil Publisher")
		return rec, p, false
	}
	return rec, p, subscribe(r, pub, flowable.Subscriber[T](p))
}

func subscribe[T any](r reporter, pub flowable.Publisher[T], s flowable.Subscriber[T]) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			r.Errorf("%s: Subscribe panicked: %v", ruleOnSubscribeFirst, v)
			ok = false
		}
	}()
	pub.Subscribe(s)
	return true
}

// settle lets every goroutine of the bubble run until it blocks: whatever
// the publisher was going to signal has been signalled when it returns.
func settle() { synctest.Wait() }

// finish cancels the subscription (a no-op if it terminated) and settles,
// so that the publisher can give back what it holds before the check's
// cleanups run.
// A Cancel that panics is recorded as a violation of rule 3.7 (Cancel
// after Cancel or after a terminal signal must be a no-op).
func finish[T any](p *probe[T]) {
	func() {
		defer func() {
			if v := recover(); v != nil {
				p.rec.mu.Lock()
				p.rec.violateLocked(ruleCancelAfterCancelIsNoop, "Cancel at the end of the check panicked: %v", v)
				p.rec.mu.Unlock()
			}
		}()
		p.Cancel()
	}()
	settle()
}

// requireNoViolations reports every violation the probe recorded.
func requireNoViolations(r reporter, rec *record, what string) bool {
	r.Helper()
	s := rec.snapshot()
	for _, v := range s.violations {
		r.Errorf("%s: %s; signals: %s", what, v, s.log)
	}
	return len(s.violations) == 0
}

// matchesErr reports whether err is the error opts expect.
func matchesErr(o Options, err error) bool {
	return o.ErrorIs == nil || errors.Is(err, o.ErrorIs)
}

// isRule39Error reports whether err says that rule 3.9 was violated.
func isRule39Error(err error) bool {
	return err != nil && (errors.Is(err, flowable.ErrNonPositiveRequest) || strings.Contains(err.Error(), "3.9"))
}
