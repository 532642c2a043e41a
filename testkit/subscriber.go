package testkit

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead/flowable"
)

// TestSubscriber is a flowable.Subscriber that records every signal it
// receives, for assertions. It requests InitialRequest (unbounded by default)
// as soon as it is subscribed, and more with Request.
//
// It also checks the publisher against the Reactive Streams rules it can
// see, and records a violation (Violations, AssertNoViolations) when a signal
// arrives before OnSubscribe or after a terminal signal (rules 1.9, 1.7),
// beyond the demand it signalled (rule 1.1), concurrently with another
// signal (rule 1.3), with a nil argument (rule 2.13), or when OnSubscribe
// comes twice (rule 2.5: the second subscription is cancelled).
//
// A TestSubscriber subscribes once; it is safe for concurrent use, so the
// test goroutine may inspect and await it while a publisher signals it from
// another goroutine. Its methods never call the subscription while holding
// its lock, so publishers may signal synchronously from Request.
type TestSubscriber[T any] struct {
	rec      recorder[T]
	initial  int64
	inSignal atomic.Bool // set while an OnXxx method runs, to detect rule 1.3 breaches

	// Guarded by rec.mu.
	sub       flowable.Subscription
	pending   []int64 // Request calls made before OnSubscribe, replayed in order
	demand    int64   // outstanding demand; math.MaxInt64 means unbounded
	requested int64   // total positive demand signalled (saturating), for messages
}

// NewTestSubscriber returns a TestSubscriber; InitialRequest is the only
// option that applies.
func NewTestSubscriber[T any](opts ...Option) *TestSubscriber[T] {
	s := defaultSettings()
	for _, o := range opts {
		o.apply(&s)
	}
	return &TestSubscriber[T]{rec: recorder[T]{who: "TestSubscriber"}, initial: s.initialRequest}
}

// enter marks the start of a signal; it reports false (and records a rule
// 1.3 violation) if another signal is in progress.
func (ts *TestSubscriber[T]) enter(name string) bool {
	if ts.inSignal.CompareAndSwap(false, true) {
		return true
	}
	ts.rec.mu.Lock()
	ts.rec.violateLocked("rule 1.3: %s while another signal was in progress (signals must be serial)", name)
	ts.rec.mu.Unlock()
	return false
}

func (ts *TestSubscriber[T]) exit(entered bool) {
	if entered {
		ts.inSignal.Store(false)
	}
}

// OnSubscribe records the subscription and signals the initial request and
// any Request made before it (a Cancel made before it cancels s at once).
func (ts *TestSubscriber[T]) OnSubscribe(s flowable.Subscription) {
	entered := ts.enter("OnSubscribe")
	ts.rec.mu.Lock()
	switch {
	case s == nil:
		ts.rec.violateLocked("rule 2.13: OnSubscribe(nil)")
		ts.rec.mu.Unlock()
		ts.exit(entered)
		return
	case ts.sub != nil:
		ts.rec.violateLocked("rule 2.5: OnSubscribe called a second time; the new subscription was cancelled")
		ts.rec.mu.Unlock()
		ts.exit(entered)
		s.Cancel()
		return
	}
	ts.sub = s
	ts.rec.addLocked(signal[T]{kind: onSubscribe})
	var reqs []int64
	if ts.initial > 0 {
		reqs = append(reqs, ts.initial)
	}
	reqs = append(reqs, ts.pending...)
	ts.pending = nil
	cancelled := ts.rec.cancelled
	ts.rec.mu.Unlock()
	// The publisher may signal synchronously from Request: leave the
	// signal first so that is not mistaken for a concurrent signal.
	ts.exit(entered)
	if cancelled {
		s.Cancel()
		return
	}
	for _, n := range reqs {
		ts.request(s, n)
	}
}

// OnNext records v.
func (ts *TestSubscriber[T]) OnNext(v T) {
	entered := ts.enter("OnNext")
	defer ts.exit(entered)
	ts.rec.mu.Lock()
	defer ts.rec.mu.Unlock()
	switch {
	case ts.sub == nil:
		ts.rec.violateLocked("rule 1.9: OnNext(%v) before OnSubscribe", v)
	case ts.rec.terminatedLocked():
		ts.rec.violateLocked("rule 1.7: OnNext(%v) after a terminal signal", v)
	case ts.demand == 0:
		ts.rec.violateLocked("rule 1.1: OnNext(%v) beyond demand (%d requested, %d delivered before it)", v, ts.requested, len(ts.rec.values))
	case ts.demand != math.MaxInt64:
		ts.demand--
	}
	ts.rec.addLocked(signal[T]{kind: onNext, value: v})
}

// OnError records err.
func (ts *TestSubscriber[T]) OnError(err error) {
	entered := ts.enter("OnError")
	defer ts.exit(entered)
	ts.rec.mu.Lock()
	defer ts.rec.mu.Unlock()
	ts.checkTerminalLocked("OnError")
	if err == nil {
		ts.rec.violateLocked("rule 2.13: OnError(nil)")
	}
	ts.rec.addLocked(signal[T]{kind: onError, err: err})
}

// OnComplete records completion.
func (ts *TestSubscriber[T]) OnComplete() {
	entered := ts.enter("OnComplete")
	defer ts.exit(entered)
	ts.rec.mu.Lock()
	defer ts.rec.mu.Unlock()
	ts.checkTerminalLocked("OnComplete")
	ts.rec.addLocked(signal[T]{kind: onComplete})
}

func (ts *TestSubscriber[T]) checkTerminalLocked(name string) {
	switch {
	case ts.sub == nil:
		ts.rec.violateLocked("rule 1.9: %s before OnSubscribe", name)
	case ts.rec.terminatedLocked():
		ts.rec.violateLocked("rule 1.7: %s after a terminal signal", name)
	}
}

// Request signals n more demand to the subscription, or, before OnSubscribe,
// keeps it to signal then. n is passed on as it is, so a test can check that
// a publisher answers Request(0) with OnError (rule 3.9).
func (ts *TestSubscriber[T]) Request(n int64) {
	ts.rec.mu.Lock()
	s := ts.sub
	if s == nil {
		ts.pending = append(ts.pending, n)
		ts.rec.mu.Unlock()
		return
	}
	ts.rec.mu.Unlock()
	ts.request(s, n)
}

// request counts positive demand before signalling it, so an OnNext that the
// Request call delivers synchronously is within demand.
func (ts *TestSubscriber[T]) request(s flowable.Subscription, n int64) {
	if n > 0 {
		ts.rec.mu.Lock()
		ts.demand = addCap(ts.demand, n)
		ts.requested = addCap(ts.requested, n)
		ts.rec.mu.Unlock()
	}
	s.Request(n)
}

func addCap(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Cancel cancels the subscription, or, before OnSubscribe, makes OnSubscribe
// cancel it. It is idempotent on the TestSubscriber's side (the
// subscription's Cancel may be called more than once, which rule 3.5 allows).
func (ts *TestSubscriber[T]) Cancel() {
	ts.rec.mu.Lock()
	ts.rec.cancelled = true
	s := ts.sub
	ts.rec.mu.Unlock()
	if s != nil {
		s.Cancel()
	}
}

// Values returns a copy of the values received so far.
func (ts *TestSubscriber[T]) Values() []T { return ts.rec.valuesCopy() }

// Err returns the error received, or nil.
func (ts *TestSubscriber[T]) Err() error { return ts.rec.firstErr() }

// IsComplete reports whether OnComplete was received.
func (ts *TestSubscriber[T]) IsComplete() bool { return ts.rec.isComplete() }

// IsSubscribed reports whether OnSubscribe was received.
func (ts *TestSubscriber[T]) IsSubscribed() bool {
	ts.rec.mu.Lock()
	defer ts.rec.mu.Unlock()
	return ts.sub != nil
}

// IsCancelled reports whether Cancel was called.
func (ts *TestSubscriber[T]) IsCancelled() bool {
	ts.rec.mu.Lock()
	defer ts.rec.mu.Unlock()
	return ts.rec.cancelled
}

// Violations returns the Reactive Streams rule violations seen so far, one
// sentence each, citing the rule.
func (ts *TestSubscriber[T]) Violations() []string { return ts.rec.violationsCopy() }

// String describes the signals received so far, as failure messages do.
func (ts *TestSubscriber[T]) String() string { return ts.rec.describe() }

// Await blocks until OnComplete or OnError arrives or timeout passes (on the
// time package's clock: fake time inside a testing/synctest bubble), and
// reports whether the subscriber terminated.
func (ts *TestSubscriber[T]) Await(timeout time.Duration) bool { return ts.rec.await(timeout) }

// AwaitCount blocks until n values arrived, the subscriber terminated or
// timeout passes, and reports whether n values arrived.
func (ts *TestSubscriber[T]) AwaitCount(n int, timeout time.Duration) bool {
	return ts.rec.awaitCount(n, timeout)
}

// AssertValues checks that exactly want (compared with reflect.DeepEqual)
// were received, in order. Like every assertion it reports a failure with
// t.Errorf, showing what was received, and returns whether it passed.
func (ts *TestSubscriber[T]) AssertValues(t testing.TB, want ...T) bool {
	t.Helper()
	return ts.rec.assertValues(t, want)
}

// AssertNoValues checks that no value was received.
func (ts *TestSubscriber[T]) AssertNoValues(t testing.TB) bool {
	t.Helper()
	return ts.rec.assertNoValues(t)
}

// AssertComplete checks that OnComplete was received (and no OnError).
func (ts *TestSubscriber[T]) AssertComplete(t testing.TB) bool {
	t.Helper()
	return ts.rec.assertComplete(t)
}

// AssertError checks that OnError was received with an error that matches
// target by errors.Is.
func (ts *TestSubscriber[T]) AssertError(t testing.TB, target error) bool {
	t.Helper()
	return ts.rec.assertError(t, target)
}

// AssertNotTerminated checks that neither OnComplete nor OnError was
// received.
func (ts *TestSubscriber[T]) AssertNotTerminated(t testing.TB) bool {
	t.Helper()
	return ts.rec.assertNotTerminated(t)
}

// AssertNoViolations checks that the publisher broke none of the Reactive
// Streams rules the TestSubscriber checks.
func (ts *TestSubscriber[T]) AssertNoViolations(t testing.TB) bool {
	t.Helper()
	return ts.rec.assertNoViolations(t)
}

// AssertResult checks that exactly want were received, then OnComplete, with
// no rule violation.
func (ts *TestSubscriber[T]) AssertResult(t testing.TB, want ...T) bool {
	t.Helper()
	ok := ts.rec.assertValues(t, want)
	ok = ts.rec.assertComplete(t) && ok
	return ts.rec.assertNoViolations(t) && ok
}

var _ flowable.Subscriber[int] = (*TestSubscriber[int])(nil)
