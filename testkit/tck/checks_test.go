package tck

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/rxbulkhead/bulkhead/flowable"
)

// fakeReporter records what a check reports, so that a check can be shown
// to fail on a publisher that breaks its rule.
type fakeReporter struct {
	mu     sync.Mutex
	errors []string
}

func (f *fakeReporter) Helper() {}

func (f *fakeReporter) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeReporter) text() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.errors, "\n")
}

// flaw is a way for a publisher to break a rule.
type flaw uint8

const (
	noFlaw               flaw = iota
	emitsWithoutDemand        // rule 1.1
	emitsConcurrently         // rule 1.3
	completesEarly            // rule 1.5: stops after one element
	signalsAfterDone          // rule 1.7: OnComplete twice
	skipsOnSubscribe          // rule 1.9
	acceptsNilSubscriber      // rule 2.13
	panicsWithoutRule         // rule 2.13: the panic names no rule
	recurses                  // rule 3.3
	emitsAfterCancel          // rule 3.6
	panicsOnSecondCancel      // rule 3.7
	deliversOnlyOne           // rule 3.8
	ignoresBadRequest         // rule 3.9
	keepsSubscribers          // rule 3.13
	overflowsDemand           // rule 3.17
)

// flawed emits 0..n-1 as requested, then completes, serially and without
// recursion, except for its flaw.
type flawed struct {
	flaw flaw
	n    int64
	mu   sync.Mutex
	kept []flowable.Subscriber[int]
}

func (p *flawed) Subscribe(s flowable.Subscriber[int]) {
	if s == nil {
		switch p.flaw {
		case acceptsNilSubscriber:
			return
		case panicsWithoutRule:
			panic("nil subscriber")
		}
		panic("flawed: Subscribe(nil) breaks rule 1.9")
	}
	if p.flaw == keepsSubscribers {
		p.mu.Lock()
		p.kept = append(p.kept, s)
		p.mu.Unlock()
	}
	sub := &flawedSub{p: p, down: s}
	switch p.flaw {
	case emitsWithoutDemand:
		s.OnSubscribe(sub)
		s.OnNext(-1)
		return
	case skipsOnSubscribe:
		s.OnNext(-1)
		s.OnSubscribe(sub)
		return
	case emitsConcurrently:
		s.OnSubscribe(sub)
		for g := range 4 {
			sub.wg.Go(func() {
				for i := range 200 {
					if sub.cancelled.Load() {
						return
					}
					s.OnNext(g*1000 + i)
				}
			})
		}
		return
	}
	s.OnSubscribe(sub)
}

type flawedSub struct {
	p         *flawed
	down      flowable.Subscriber[int]
	mu        sync.Mutex
	demand    int64
	next      int64
	emitting  bool
	done      bool
	cancels   int
	cancelled atomicBool
	wg        sync.WaitGroup
}

type atomicBool struct {
	mu sync.Mutex
	v  bool
}

func (b *atomicBool) Store(v bool) { b.mu.Lock(); b.v = v; b.mu.Unlock() }
func (b *atomicBool) Load() bool   { b.mu.Lock(); defer b.mu.Unlock(); return b.v }

func (s *flawedSub) Request(n int64) {
	f := s.p.flaw
	s.mu.Lock()
	if s.done && f != emitsAfterCancel {
		s.mu.Unlock()
		return
	}
	if n <= 0 {
		if f == ignoresBadRequest {
			s.mu.Unlock()
			return
		}
		s.done = true
		s.mu.Unlock()
		s.down.OnError(errors.New("rule 3.9: n must be > 0"))
		return
	}
	switch {
	case f == deliversOnlyOne:
		n = 1
	case f == overflowsDemand:
		s.demand += n
		if s.demand < 0 {
			s.done = true
			s.mu.Unlock()
			s.down.OnError(errors.New("demand overflow"))
			return
		}
		n = 0
	}
	if s.demand > math.MaxInt64-n {
		s.demand = math.MaxInt64
	} else {
		s.demand += n
	}
	if s.emitting && f != recurses {
		s.mu.Unlock()
		return
	}
	s.emitting = true
	for s.demand > 0 && s.next < s.p.n {
		v := int(s.next)
		s.next++
		s.demand--
		s.mu.Unlock()
		s.down.OnNext(v)
		s.mu.Lock()
		if f == completesEarly {
			s.next = s.p.n
		}
		if s.done && f != emitsAfterCancel {
			s.mu.Unlock()
			return
		}
	}
	s.emitting = false
	complete := s.next == s.p.n && !s.done
	if complete {
		s.done = true
	}
	s.mu.Unlock()
	if complete {
		s.down.OnComplete()
		if f == signalsAfterDone {
			s.down.OnComplete()
		}
	}
}

func (s *flawedSub) Cancel() {
	s.mu.Lock()
	s.cancels++
	second := s.cancels > 1
	s.done = true
	s.mu.Unlock()
	s.cancelled.Store(true)
	if second && s.p.flaw == panicsOnSecondCancel {
		panic("cancelled twice")
	}
}

// TestEachCheckFailsOnAPublisherThatBreaksItsRule shows that every check can
// fail: run on a publisher with the matching flaw, it reports the rule; run
// on the same publisher without the flaw, it reports nothing.
func TestEachCheckFailsOnAPublisherThatBreaksItsRule(t *testing.T) {
	opts := Options{Elements: 5}
	for _, tc := range []struct {
		flaw flaw
		rule Rule
	}{
		{emitsWithoutDemand, ruleDemand},
		{emitsConcurrently, ruleSerialSignals},
		{completesEarly, ruleCompletionSignalled},
		{signalsAfterDone, ruleNothingAfterTerminal},
		{skipsOnSubscribe, ruleOnSubscribeFirst},
		{acceptsNilSubscriber, ruleNoNilArguments},
		{panicsWithoutRule, ruleNoNilArguments},
		{recurses, ruleBoundedRecursion},
		{emitsAfterCancel, ruleRequestAfterCancelIsNoop},
		{panicsOnSecondCancel, ruleCancelAfterCancelIsNoop},
		{deliversOnlyOne, ruleRequestAddsDemand},
		{ignoresBadRequest, ruleNonPositiveRequestFails},
		{keepsSubscribers, ruleCancelDropsSubscriber},
		{overflowsDemand, ruleUnboundedDemand},
	} {
		var c check[int]
		for _, x := range checks[int]() {
			if x.rule == tc.rule {
				c = x
			}
		}
		t.Run(tc.rule.Name(), func(t *testing.T) {
			for _, f := range []flaw{noFlaw, tc.flaw} {
				synctest.Test(t, func(t *testing.T) {
					pub := &flawed{flaw: f, n: opts.Elements}
					rep := &fakeReporter{}
					if na := c.run(t, rep, func(*testing.T) flowable.Publisher[int] { return pub }, opts); na != "" {
						t.Fatalf("the check says it does not apply: %s", na)
					}
					got := rep.text()
					switch {
					case f == noFlaw && got != "":
						t.Errorf("the check failed a correct publisher:\n%s", got)
					case f != noFlaw && !strings.Contains(got, "rule "+tc.rule.ID+" (\""):
						t.Errorf("the check did not report rule %s for a publisher that breaks it; it reported:\n%s", tc.rule.ID, got)
					}
				})
			}
		})
	}
}

// TestChecksThatDoNotApplySaySo pins the reasons given for skipping.
func TestChecksThatDoNotApplySaySo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rep := &fakeReporter{}
		empty := func(*testing.T) flowable.Publisher[int] { return flowable.Empty[int]() }
		if na := check3_9(t, rep, empty, Options{}); !strings.Contains(na, "terminates before any request") {
			t.Errorf("rule 3.9 on Empty: got reason %q", na)
		}
		if na := check1_4(t, rep, empty, Options{}); !strings.Contains(na, "does not fail") {
			t.Errorf("rule 1.4 on Empty: got reason %q", na)
		}
		if got := rep.text(); got != "" {
			t.Errorf("a check that does not apply reported:\n%s", got)
		}
	})
}

func TestRulesListsEveryCheckedRuleOnceInCheckOrder(t *testing.T) {
	var checked []string
	for _, c := range checks[int]() {
		checked = append(checked, c.rule.ID)
	}
	var listed []string
	for _, r := range Rules() {
		listed = append(listed, r.ID)
	}
	// 2.12 is checked by the recording subscriber, not by a check of its own.
	if want := append(checked, "2.12"); !slices.Equal(listed, want) {
		t.Fatalf("Rules() = %v, want the checks' rules %v", listed, want)
	}
}
