package testkit_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// permitSource acquires a permit of bh when subscribed, then emits values
// and completes, giving the permit back; a rejection becomes OnError. It is
// a minimal stand-in for flowable.Bulkhead (no cancellation of a pending
// acquisition), enough to drive the verifier with real bulkhead timers.
type permitSource[T any] struct {
	bh     *bulkhead.Semaphore
	values []T
}

func (p permitSource[T]) Subscribe(s flowable.Subscriber[T]) {
	inner := &manualPublisher[T]{}
	inner.Subscribe(s)
	p.bh.AcquirePermissionAsync().OnDone(func(err error) {
		if err != nil {
			s.OnError(err)
			return
		}
		for _, v := range p.values {
			s.OnNext(v)
		}
		p.bh.FinishCall()
		s.OnComplete()
	})
}

func TestVerifyPassesAMatchingScript(t *testing.T) {
	testkit.Verify[int](sliceSource[int]{values: []int{1, 2, 3}}).
		ExpectNext(1, 2).
		ExpectNextMatches(func(v int) bool { return v == 3 }).
		ExpectComplete().
		Run(t)
}

func TestVerifyDrivesDemandStepByStep(t *testing.T) {
	clock := testkit.NewVirtualClock(start)
	testkit.Verify[int](sliceSource[int]{values: []int{1, 2, 3, 4, 5}}, testkit.InitialRequest(0), testkit.VerifierClock(clock)).
		ExpectSubscription().
		ExpectNoEvent(time.Hour).
		ThenRequest(2).
		ExpectNext(1, 2).
		ExpectNoEvent(time.Hour).
		ThenRequest(10).
		ExpectNextCount(3).
		ExpectComplete().
		Run(t)
	if got := clock.Since(start); got != 2*time.Hour {
		t.Fatalf("ExpectNoEvent advanced the clock by %v, want 2h", got)
	}
}

func TestVerifyRunsBulkheadTimeoutsOnAVirtualClock(t *testing.T) {
	clock := testkit.NewVirtualClock(start)
	bh := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(clock))
	testkit.CheckPermits(t, bh)
	bh.TryAcquirePermission()

	testkit.Verify[string](permitSource[string]{bh, []string{"order"}}, testkit.VerifierClock(clock)).
		ExpectSubscription().
		ExpectNoEvent(49*time.Millisecond).
		ThenAdvance(clock, time.Millisecond).
		ExpectErrorIs(bulkhead.ErrBulkheadFull).
		Then(bh.FinishCall).
		Run(t)
}

func TestVerifyRunsBulkheadGrantsOnAVirtualClock(t *testing.T) {
	clock := testkit.NewVirtualClock(start)
	bh := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(clock))
	testkit.CheckPermits(t, bh)
	bh.TryAcquirePermission()

	testkit.Verify[string](permitSource[string]{bh, []string{"order"}}, testkit.VerifierClock(clock)).
		ExpectNoEvent(40 * time.Millisecond).
		Then(bh.FinishCall). // the permit comes back: the waiting subscription is granted
		ExpectNext("order").
		ExpectComplete().
		Run(t)
}

func TestVerifyWaitsForSignalsInASynctestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bh := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 2 * time.Second, MaxQueuedCalls: bulkhead.Unbounded})
		testkit.CheckPermits(t, bh)
		bh.TryAcquirePermission()
		defer bh.FinishCall()
		begin := time.Now()

		// No clock step: the bubble's clock jumps to the wait timeout while
		// the verifier waits for the signal.
		testkit.Verify[int](permitSource[int]{bh, []int{1}}).
			ExpectNoEvent(time.Second).
			ExpectErrorIs(bulkhead.ErrBulkheadFull).
			Run(t)
		if d := time.Since(begin); d != 2*time.Second {
			t.Fatalf("the rejection came after %v of bubble time, want 2s", d)
		}
	})
}

func TestVerifyCancelStopsTheSource(t *testing.T) {
	p := &manualPublisher[int]{}
	testkit.Verify[int](p).ThenCancel().Run(t)
	if _, cancelled := p.state(); cancelled != 1 {
		t.Fatalf("source cancelled %d times, want once", cancelled)
	}
}

func TestVerifyIgnoresSignalsAfterCancel(t *testing.T) {
	p := &manualPublisher[int]{}
	testkit.Verify[int](p).
		ThenCancel().
		Then(func() { p.subscriber().OnNext(1) }). // in flight when Cancel was called
		Run(t)
}

func TestVerifyPassesInvalidRequestsOn(t *testing.T) {
	testkit.Verify[int](sliceSource[int]{values: []int{1}}, testkit.InitialRequest(0)).
		ThenRequest(0).
		ExpectErrorMatches(func(err error) bool { return strings.Contains(err.Error(), "rule 3.9") }).
		Run(t)
}

func TestVerifyCanBeRunTwice(t *testing.T) {
	v := testkit.Verify[int](sliceSource[int]{values: []int{1}}).ExpectNext(1).ExpectComplete()
	for run := range 2 {
		if !v.Run(t) {
			t.Fatalf("run %d of a passing script failed", run+1)
		}
	}
}

// The verifier must fail when the publisher does not follow the script,
// naming the step and showing what was received.
func TestVerifyFailsOnMismatch(t *testing.T) {
	tests := []struct {
		name string
		run  func(tb testing.TB) bool
		want []string
	}{
		{"wrong value", func(tb testing.TB) bool {
			return testkit.Verify[int](sliceSource[int]{values: []int{1, 2}}).ExpectNext(1, 3).ExpectComplete().Run(tb)
		}, []string{"step 1 ExpectNext(1, 3): value #2: got OnNext(2), want OnNext(3)", "received: OnSubscribe, OnNext(1), OnNext(2), OnComplete"}},
		{"error instead of value", func(tb testing.TB) bool {
			return testkit.Verify[int](sliceSource[int]{err: errBoom}).ExpectNext(1).ExpectComplete().Run(tb)
		}, []string{"step 1 ExpectNext(1): value #1: got OnError(boom), want OnNext(1)"}},
		{"completion instead of error", func(tb testing.TB) bool {
			return testkit.Verify[int](sliceSource[int]{}).ExpectErrorIs(errBoom).Run(tb)
		}, []string{`step 1 ExpectErrorIs("boom"): got OnComplete, want OnError`}},
		{"other error", func(tb testing.TB) bool {
			return testkit.Verify[int](sliceSource[int]{err: errOther}).ExpectErrorIs(bulkhead.ErrBulkheadFull).Run(tb)
		}, []string{`error "other" (*errors.errorString) does not match the target (errors.Is)`}},
		{"error predicate", func(tb testing.TB) bool {
			return testkit.Verify[int](sliceSource[int]{err: errOther}).ExpectErrorMatches(func(error) bool { return false }).Run(tb)
		}, []string{`step 1 ExpectErrorMatches(func): error "other" (*errors.errorString) does not match`}},
		{"error instead of completion", func(tb testing.TB) bool {
			return testkit.Verify[int](sliceSource[int]{err: errBoom}).ExpectComplete().Run(tb)
		}, []string{"step 1 ExpectComplete(): got OnError(boom), want OnComplete"}},
		{"value predicate", func(tb testing.TB) bool {
			return testkit.Verify[int](sliceSource[int]{values: []int{4}}).ExpectNextMatches(func(v int) bool { return v < 3 }).ExpectComplete().Run(tb)
		}, []string{"step 1 ExpectNextMatches(func): OnNext(4) does not match"}},
		{"too few values", func(tb testing.TB) bool {
			return testkit.Verify[int](sliceSource[int]{values: []int{1, 2}}).ExpectNextCount(3).ExpectComplete().Run(tb)
		}, []string{"step 1 ExpectNextCount(3): after 2 of 3 values: got OnComplete, want OnNext"}},
		{"values left over", func(tb testing.TB) bool {
			return testkit.Verify[int](sliceSource[int]{values: []int{1, 2}}, testkit.VerifierClock(testkit.NewVirtualClock(start))).ExpectNext(1).ThenCancel().ExpectNoEvent(0).Run(tb)
		}, []string{"step 3 ExpectNoEvent(0s): got OnNext(2)"}},
		{"signals out of order", func(tb testing.TB) bool {
			p := &manualPublisher[int]{}
			return testkit.Verify[int](p).
				Then(func() { p.subscriber().OnNext(1); p.subscriber().OnComplete() }).
				ExpectComplete().Run(tb)
		}, []string{"step 2 ExpectComplete(): got OnNext(1), want OnComplete"}},
		{"unconsumed signal", func(tb testing.TB) bool {
			p := &manualPublisher[int]{}
			return testkit.Verify[int](p).
				Then(func() { p.subscriber().OnComplete(); p.subscriber().OnComplete() }).
				ExpectComplete().Run(tb)
		}, []string{"unexpected OnComplete after the last step"}},
		{"rule violation", func(tb testing.TB) bool {
			p := &manualPublisher[int]{}
			return testkit.Verify[int](p, testkit.InitialRequest(1)).
				Then(func() { p.subscriber().OnNext(1); p.subscriber().OnNext(2) }).
				ExpectNext(1, 2).
				ThenCancel().Run(tb)
		}, []string{"broke 1 Reactive Streams rule(s)", "rule 1.1: OnNext(2) beyond demand"}},
		{"subscription expected first", func(tb testing.TB) bool {
			return testkit.Verify[int](sliceSource[int]{values: []int{1}}).ExpectNext(1).ExpectSubscription().ExpectComplete().Run(tb)
		}, []string{"step 2 ExpectSubscription(): OnSubscribe was already consumed"}},
		{"no terminal step", func(tb testing.TB) bool {
			return testkit.Verify[int](sliceSource[int]{values: []int{1}}).ExpectNext(1).Run(tb)
		}, []string{"the script has no terminal step"}},
		{"signal during ExpectNoEvent", func(tb testing.TB) bool {
			clock := testkit.NewVirtualClock(start)
			p := &manualPublisher[int]{}
			return testkit.Verify[int](p, testkit.VerifierClock(clock)).
				Then(func() { clock.AfterFunc(10*time.Millisecond, func() { p.subscriber().OnNext(1) }) }).
				ExpectNoEvent(20 * time.Millisecond).
				ThenCancel().Run(tb)
		}, []string{"step 2 ExpectNoEvent(20ms): got OnNext(1)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ok bool
			f := runFake(func(tb *fakeTB) { ok = tt.run(tb) })
			if ok {
				t.Error("Run returned true")
			}
			wantFailure(t, f, append([]string{"testkit: Verify: "}, tt.want...)...)
		})
	}
}

func TestVerifyFailsWhenNoSignalComesInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &manualPublisher[int]{}
		begin := time.Now()
		f := runFake(func(tb *fakeTB) {
			testkit.Verify[int](p, testkit.WithTimeout(time.Minute)).ExpectNext(1).ExpectComplete().Run(tb)
		})
		wantFailure(t, f, "step 1 ExpectNext(1): value #1: no signal within 1m0s", "ThenAdvance")
		if d := time.Since(begin); d != time.Minute {
			t.Fatalf("gave up after %v of bubble time, want 1m", d)
		}
		if _, cancelled := p.state(); cancelled != 1 {
			t.Fatalf("a failed script cancelled its subscription %d times, want once", cancelled)
		}
	})
}

func TestVerifyPanicsOnNilArguments(t *testing.T) {
	for name, f := range map[string]func(){
		"Verify":             func() { testkit.Verify[int](nil) },
		"ThenAdvance":        func() { testkit.Verify[int](sliceSource[int]{}).ThenAdvance(nil, time.Second) },
		"Then":               func() { testkit.Verify[int](sliceSource[int]{}).Then(nil) },
		"ExpectNextMatches":  func() { testkit.Verify[int](sliceSource[int]{}).ExpectNextMatches(nil) },
		"ExpectErrorMatches": func() { testkit.Verify[int](sliceSource[int]{}).ExpectErrorMatches(nil) },
		"VerifierClock":      func() { testkit.VerifierClock(nil) },
		"WithTimeout":        func() { testkit.WithTimeout(0) },
		"InitialRequest":     func() { testkit.InitialRequest(-1) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil {
					t.Fatal("no panic")
				} else if !strings.HasPrefix(errorText(r), "testkit: ") {
					t.Fatalf("panic %q does not start with testkit:", r)
				}
			}()
			f()
		})
	}
}

func errorText(r any) string {
	if err, ok := r.(error); ok {
		return err.Error()
	}
	s, _ := r.(string)
	return s
}

// The script of docs/testing.md, on the real Flowable operator.
func TestVerifyBulkheadedFlowableWaitsThenHonoursLaterDemand(t *testing.T) {
	clock := testkit.NewVirtualClock(start)
	walmart := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(clock))
	testkit.CheckPermits(t, walmart)
	walmart.TryAcquirePermission()

	testkit.Verify(flowable.Bulkhead(walmart, flowable.Just(1, 2)), testkit.InitialRequest(0), testkit.VerifierClock(clock)).
		ExpectSubscription().
		ExpectNoEvent(40*time.Millisecond).
		Then(walmart.FinishCall).
		ThenRequest(2).
		ExpectNext(1, 2).
		ExpectComplete().
		Run(t)
}

// A queued subscription that expires on the VirtualClock, and one that
// cancels while waiting: neither holds a permit at the end.
func TestVerifyBulkheadedFlowableExpiryAndCancelLeaveNoPermit(t *testing.T) {
	clock := testkit.NewVirtualClock(start)
	walmart := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(clock))
	testkit.CheckPermits(t, walmart)
	walmart.TryAcquirePermission()
	defer walmart.FinishCall()

	testkit.Verify(flowable.Bulkhead(walmart, flowable.Range(0, 10)), testkit.VerifierClock(clock)).
		ExpectSubscription().
		ExpectNoEvent(49*time.Millisecond).
		ThenAdvance(clock, time.Millisecond).
		ExpectErrorIs(bulkhead.ErrBulkheadFull).
		Run(t)
	testkit.Verify(flowable.Bulkhead(walmart, flowable.Range(0, 10)), testkit.VerifierClock(clock)).
		ExpectNoEvent(10 * time.Millisecond).
		ThenCancel().
		Then(func() {
			if m := walmart.Metrics(); m.QueuedCalls != 0 {
				t.Errorf("QueuedCalls = %d after the waiting subscription cancelled, want 0", m.QueuedCalls)
			}
		}).
		ExpectNoEvent(time.Hour).
		Run(t)
}

func TestVerifyExpectErrorAcceptsAnyErrorButNotCompletion(t *testing.T) {
	testkit.Verify[int](sliceSource[int]{err: errOther}).ExpectError().Run(t)
	f := runFake(func(tb *fakeTB) { testkit.Verify[int](sliceSource[int]{}).ExpectError().Run(tb) })
	wantFailure(t, f, "step 1 ExpectError(): got OnComplete, want OnError")
}

// rudePublisher signals OnNext before OnSubscribe.
type rudePublisher struct{}

func (rudePublisher) Subscribe(s flowable.Subscriber[int]) {
	s.OnNext(1)
	s.OnSubscribe(&manualSub[int]{&manualPublisher[int]{}})
}

func TestVerifyFailsWhenOnSubscribeIsNotFirst(t *testing.T) {
	f := runFake(func(tb *fakeTB) { testkit.Verify[int](rudePublisher{}).ThenCancel().Run(tb) })
	wantFailure(t, f, "step 1 ThenCancel(): got OnNext(1), want OnSubscribe first", "rule 1.9")
}

// silentPublisher never calls OnSubscribe.
type silentPublisher struct{}

func (silentPublisher) Subscribe(flowable.Subscriber[int]) {}

func TestVerifyFailsWhenOnSubscribeNeverComes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := runFake(func(tb *fakeTB) {
			testkit.Verify[int](silentPublisher{}).ThenRequest(1).ThenCancel().Run(tb)
		})
		wantFailure(t, f, "step 1 ThenRequest(1): waiting for OnSubscribe: no signal within 5s", "received: no signal")
	})
}
