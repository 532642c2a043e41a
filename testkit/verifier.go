package testkit

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead/flowable"
)

// Verifier is a step-by-step script of what a Publisher must signal, in the
// manner of Reactor's StepVerifier:
//
//	testkit.Verify(pub, testkit.InitialRequest(0)).
//		ExpectSubscription().
//		ThenRequest(2).
//		ExpectNext(1, 2).
//		ThenAdvance(clock, 50*time.Millisecond).
//		ExpectErrorIs(bulkhead.ErrBulkheadFull).
//		Run(t)
//
// Building the script does nothing; Run subscribes a TestSubscriber to the
// publisher on the calling goroutine and plays the steps in order. Each
// expectation consumes the next recorded signal, waiting for it up to the
// timeout (WithTimeout, default DefaultTimeout). Every step except
// ExpectSubscription first consumes the OnSubscribe signal if no step did.
//
// Time moves in one of two ways: ThenAdvance moves a VirtualClock (timers
// fire on the test goroutine, before the next step); inside a
// testing/synctest bubble, the fake clock moves by itself while the test
// goroutine waits for a signal, so no step is needed.
//
// A script must contain a terminal step (ExpectComplete, ExpectError,
// ExpectErrorIs, ExpectErrorMatches or ThenCancel). Run fails if a step's
// expectation is not met, if signals remain that no step consumed, or if the
// publisher broke a Reactive Streams rule (see TestSubscriber).
//
// A Verifier is built and run by one goroutine; Run may be called more than
// once, each time subscribing anew.
type Verifier[T any] struct {
	pub      flowable.Publisher[T]
	settings settings
	steps    []step[T]
	terminal bool
}

type step[T any] struct {
	desc string
	run  func(r *verifyRun[T]) error
}

// Verify starts a script over pub. InitialRequest (default unbounded),
// VerifierClock (the clock ExpectNoEvent advances) and WithTimeout apply.
func Verify[T any](pub flowable.Publisher[T], opts ...Option) *Verifier[T] {
	if pub == nil {
		panic("testkit: Verify called with a nil Publisher")
	}
	s := defaultSettings()
	for _, o := range opts {
		o.apply(&s)
	}
	return &Verifier[T]{pub: pub, settings: s}
}

func (v *Verifier[T]) add(desc string, run func(r *verifyRun[T]) error) *Verifier[T] {
	v.steps = append(v.steps, step[T]{desc: desc, run: run})
	return v
}

// ExpectSubscription expects the OnSubscribe signal. It must be the first
// step that consumes a signal.
func (v *Verifier[T]) ExpectSubscription() *Verifier[T] {
	return v.add("ExpectSubscription()", func(r *verifyRun[T]) error {
		if r.sawSubscribe {
			return errors.New("OnSubscribe was already consumed by an earlier step")
		}
		return r.consumeSubscribe()
	})
}

// ThenRequest signals n more demand (n is passed on as it is, so n <= 0
// tests rule 3.9).
func (v *Verifier[T]) ThenRequest(n int64) *Verifier[T] {
	return v.add(fmt.Sprintf("ThenRequest(%d)", n), func(r *verifyRun[T]) error {
		if err := r.consumeSubscribe(); err != nil {
			return err
		}
		r.ts.Request(n)
		return nil
	})
}

// ThenCancel cancels the subscription. It is a terminal step: signals that
// arrive after it are not expected by Run (rule 3.12 lets a publisher stop
// eventually), but steps after it may still check them (ExpectNoEvent) or
// other state (Then).
func (v *Verifier[T]) ThenCancel() *Verifier[T] {
	v.terminal = true
	return v.add("ThenCancel()", func(r *verifyRun[T]) error {
		if err := r.consumeSubscribe(); err != nil {
			return err
		}
		r.ts.Cancel()
		r.cancelled = true
		return nil
	})
}

// ThenAdvance advances clock by d; the timers that fall due run on the test
// goroutine before the next step.
func (v *Verifier[T]) ThenAdvance(clock *VirtualClock, d time.Duration) *Verifier[T] {
	if clock == nil {
		panic("testkit: ThenAdvance called with a nil clock")
	}
	return v.add(fmt.Sprintf("ThenAdvance(%v)", d), func(r *verifyRun[T]) error {
		if err := r.consumeSubscribe(); err != nil {
			return err
		}
		clock.Advance(d)
		return nil
	})
}

// Then runs f, for actions and checks that are not signals: release a
// permit, call synctest.Wait, assert on a bulkhead's Metrics.
func (v *Verifier[T]) Then(f func()) *Verifier[T] {
	if f == nil {
		panic("testkit: Then called with a nil func")
	}
	return v.add("Then(func)", func(r *verifyRun[T]) error {
		f()
		return nil
	})
}

// ExpectNext expects the next signals to be OnNext of values, in order,
// compared with reflect.DeepEqual.
func (v *Verifier[T]) ExpectNext(values ...T) *Verifier[T] {
	return v.add(fmt.Sprintf("ExpectNext(%s)", joinValues(values)), func(r *verifyRun[T]) error {
		for i, want := range values {
			s, err := r.next()
			if err != nil {
				return fmt.Errorf("value #%d: %w", i+1, err)
			}
			if s.kind != onNext || !reflect.DeepEqual(s.value, want) {
				return fmt.Errorf("value #%d: got %v, want OnNext(%v)", i+1, s, want)
			}
		}
		return nil
	})
}

// ExpectNextCount expects the next n signals to be OnNext, whatever their
// values.
func (v *Verifier[T]) ExpectNextCount(n int) *Verifier[T] {
	return v.add(fmt.Sprintf("ExpectNextCount(%d)", n), func(r *verifyRun[T]) error {
		for i := range n {
			s, err := r.next()
			if err != nil {
				return fmt.Errorf("after %d of %d values: %w", i, n, err)
			}
			if s.kind != onNext {
				return fmt.Errorf("after %d of %d values: got %v, want OnNext", i, n, s)
			}
		}
		return nil
	})
}

// ExpectNextMatches expects the next signal to be OnNext of a value for
// which match returns true.
func (v *Verifier[T]) ExpectNextMatches(match func(T) bool) *Verifier[T] {
	if match == nil {
		panic("testkit: ExpectNextMatches called with a nil func")
	}
	return v.add("ExpectNextMatches(func)", func(r *verifyRun[T]) error {
		s, err := r.next()
		if err != nil {
			return err
		}
		if s.kind != onNext {
			return fmt.Errorf("got %v, want OnNext", s)
		}
		if !match(s.value) {
			return fmt.Errorf("OnNext(%v) does not match", s.value)
		}
		return nil
	})
}

// ExpectNoEvent expects no signal for d: it advances the VerifierClock
// clock by d, or, without one, sleeps d on the time package's clock, which is fake
// inside a testing/synctest bubble (outside one, this is a real sleep).
func (v *Verifier[T]) ExpectNoEvent(d time.Duration) *Verifier[T] {
	return v.add(fmt.Sprintf("ExpectNoEvent(%v)", d), func(r *verifyRun[T]) error {
		if err := r.consumeSubscribe(); err != nil {
			return err
		}
		if c := r.v.settings.clock; c != nil {
			c.Advance(d)
		} else {
			time.Sleep(d)
		}
		if s, ok := r.peek(); ok {
			return fmt.Errorf("got %v", s)
		}
		return nil
	})
}

// ExpectComplete expects OnComplete. It is a terminal step.
func (v *Verifier[T]) ExpectComplete() *Verifier[T] {
	v.terminal = true
	return v.add("ExpectComplete()", func(r *verifyRun[T]) error {
		s, err := r.next()
		if err != nil {
			return err
		}
		if s.kind != onComplete {
			return fmt.Errorf("got %v, want OnComplete", s)
		}
		return nil
	})
}

// ExpectError expects OnError with any error. It is a terminal step.
func (v *Verifier[T]) ExpectError() *Verifier[T] {
	return v.expectError("ExpectError()", func(error) bool { return true }, "")
}

// ExpectErrorIs expects OnError with an error that matches target by
// errors.Is. It is a terminal step.
func (v *Verifier[T]) ExpectErrorIs(target error) *Verifier[T] {
	return v.expectError(fmt.Sprintf("ExpectErrorIs(%q)", target),
		func(err error) bool { return errors.Is(err, target) }, "does not match the target (errors.Is)")
}

// ExpectErrorMatches expects OnError with an error for which match returns
// true. It is a terminal step.
func (v *Verifier[T]) ExpectErrorMatches(match func(error) bool) *Verifier[T] {
	if match == nil {
		panic("testkit: ExpectErrorMatches called with a nil func")
	}
	return v.expectError("ExpectErrorMatches(func)", match, "does not match")
}

func (v *Verifier[T]) expectError(desc string, match func(error) bool, mismatch string) *Verifier[T] {
	v.terminal = true
	return v.add(desc, func(r *verifyRun[T]) error {
		s, err := r.next()
		if err != nil {
			return err
		}
		if s.kind != onError {
			return fmt.Errorf("got %v, want OnError", s)
		}
		if !match(s.err) {
			return fmt.Errorf("error %q (%T) %s", s.err, s.err, mismatch)
		}
		return nil
	})
}

// Run subscribes to the publisher and plays the script. It reports the first
// unmet expectation with t.Errorf, naming the step and showing every signal
// received, cancels the subscription and returns false; it returns true if
// the whole script passed.
func (v *Verifier[T]) Run(t testing.TB) bool {
	t.Helper()
	if !v.terminal {
		t.Errorf("testkit: Verify: the script has no terminal step (ExpectComplete, ExpectError, ExpectErrorIs, ExpectErrorMatches or ThenCancel)")
		return false
	}
	r := &verifyRun[T]{v: v, ts: NewTestSubscriber[T](InitialRequest(v.settings.initialRequest))}
	v.pub.Subscribe(r.ts)
	for i, s := range v.steps {
		if err := s.run(r); err != nil {
			r.ts.Cancel()
			r.fail(t, "step %d %s: %v", i+1, s.desc, err)
			return false
		}
	}
	if !r.sawSubscribe {
		if err := r.consumeSubscribe(); err != nil {
			r.fail(t, "%v", err)
			return false
		}
	}
	if s, ok := r.peek(); ok && !r.cancelled {
		r.ts.Cancel()
		r.fail(t, "unexpected %v after the last step", s)
		return false
	}
	if vs := r.ts.Violations(); len(vs) > 0 {
		r.ts.Cancel()
		r.fail(t, "the publisher broke %d Reactive Streams rule(s)", len(vs))
		return false
	}
	return true
}

// verifyRun is the state of one Run: a cursor over the signals recorded by
// ts.
type verifyRun[T any] struct {
	v            *Verifier[T]
	ts           *TestSubscriber[T]
	cursor       int
	sawSubscribe bool
	cancelled    bool // ThenCancel ran: later signals are not unexpected
}

func (r *verifyRun[T]) fail(t testing.TB, format string, args ...any) {
	t.Helper()
	rec := &r.ts.rec
	rec.mu.Lock()
	defer rec.mu.Unlock()
	t.Errorf("testkit: Verify: %s\n  %s", fmt.Sprintf(format, args...), rec.describeLocked())
}

// await waits for the signal at the cursor.
func (r *verifyRun[T]) await() (signal[T], error) {
	rec := &r.ts.rec
	ok := waitUntil(&rec.mu, &rec.changed, r.v.settings.timeout, func() bool { return len(rec.signals) > r.cursor })
	if !ok {
		return signal[T]{}, fmt.Errorf("no signal within %v (%s)", r.v.settings.timeout, timeoutHint)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	s := rec.signals[r.cursor]
	r.cursor++
	return s, nil
}

const timeoutHint = "on a VirtualClock, signals due later need ThenAdvance; in a synctest bubble, a longer wait needs WithTimeout"

func (r *verifyRun[T]) consumeSubscribe() error {
	if r.sawSubscribe {
		return nil
	}
	s, err := r.await()
	if err != nil {
		return fmt.Errorf("waiting for OnSubscribe: %w", err)
	}
	if s.kind != onSubscribe {
		return fmt.Errorf("got %v, want OnSubscribe first", s)
	}
	r.sawSubscribe = true
	return nil
}

// next returns the next signal after OnSubscribe.
func (r *verifyRun[T]) next() (signal[T], error) {
	if err := r.consumeSubscribe(); err != nil {
		return signal[T]{}, err
	}
	return r.await()
}

// peek returns the signal at the cursor, if one arrived, without waiting.
func (r *verifyRun[T]) peek() (signal[T], bool) {
	rec := &r.ts.rec
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.signals) > r.cursor {
		return rec.signals[r.cursor], true
	}
	return signal[T]{}, false
}

func joinValues[T any](vs []T) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}
