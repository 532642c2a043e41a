package completable_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// queueing is a one-permit bulkhead whose callers wait (for an hour at most).
var queueing = bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded}

// The first four tests port the intent of resilience4j's rxjava3
// CompletableBulkheadTest.

func TestBulkheadCompletesAndGivesPermitBackWithOnComplete(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1})
	ev := testkit.RecordEvents(t, b)
	r := newRecorder(t)
	completable.Bulkhead(b, completable.Complete()).Subscribe(r)
	if completed, err := r.result(); !completed || err != nil {
		t.Fatalf("completed=%v err=%v, want completion", completed, err)
	}
	if ev.Count(bulkhead.CallPermitted) != 1 || ev.Count(bulkhead.CallFinished) != 1 {
		t.Fatal("want one CallPermitted and one CallFinished (OnComplete)")
	}
}

func TestBulkheadPropagatesErrorAndGivesPermitBackWithOnComplete(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1})
	ev := testkit.RecordEvents(t, b)
	r := newRecorder(t)
	completable.Bulkhead(b, completable.Error(errBoom)).Subscribe(r)
	if completed, err := r.result(); completed || err != errBoom {
		t.Fatalf("completed=%v err=%v, want errBoom", completed, err)
	}
	if ev.Count(bulkhead.CallFinished) != 1 {
		t.Fatal("a failed call must give its permit back with OnComplete")
	}
}

func TestBulkheadFullSignalsFullErrorAfterOnSubscribeAndNeverSubscribesSource(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1})
	ev := testkit.RecordEvents(t, b)
	b.TryAcquirePermission()
	defer b.ReleasePermission()
	src := newProbe(completable.Complete())
	r := newRecorder(t)
	completable.Bulkhead(b, src).Subscribe(r) // the recorder fails on a signal before OnSubscribe
	completed, err := r.result()
	var fe *bulkhead.FullError
	if completed || !errors.As(err, &fe) || fe.Name != "partner" || fe.Reason != bulkhead.NoWait {
		t.Fatalf("completed=%v err=%v, want *FullError{partner, NoWait} and no completion", completed, err)
	}
	if src.subscribed.Load() != 0 {
		t.Fatal("source subscribed after a rejection")
	}
	if ev.Count(bulkhead.CallFinished) != 0 {
		t.Fatal("OnComplete called for a rejected call")
	}
}

func TestDisposeAfterSubscribeGivesPermitBackWithReleasePermission(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1})
	ev := testkit.RecordEvents(t, b)
	c, _, started := held()
	src := newProbe(c)
	r := newRecorder(t)
	completable.Bulkhead(b, src).Subscribe(r)
	<-started
	r.Dispose()
	r.Dispose()
	if got := src.disposed.Load(); got != 1 {
		t.Fatalf("source disposed %d times, want 1", got)
	}
	if m := b.Metrics(); m.InFlightCalls != 0 {
		t.Fatal("permit not given back on Dispose")
	}
	if ev.Count(bulkhead.CallFinished) != 0 {
		t.Fatal("Dispose before the call ended must use ReleasePermission, not OnComplete")
	}
	if r.terminated() || !r.disposable().IsDisposed() {
		t.Fatal("want no signal and IsDisposed() after Dispose")
	}
}

// The following tests port the intent of resilience4j's queueing tests
// (BulkheadOperatorQueueingTest) to a Completable.

func TestSubscribeDoesNotBlockOrParkGoroutinesWhenFull(t *testing.T) {
	b := newBulkhead(t, queueing)
	b.TryAcquirePermission()
	src := newProbe(completable.Complete())
	before := runtime.NumGoroutine()
	rs := make([]*recorder, 100)
	for i := range rs {
		rs[i] = newRecorder(t)
		completable.Bulkhead(b, src).Subscribe(rs[i]) // returns although no permit is free
	}
	// NumGoroutine counts the whole process: a slack of 5 leaves room for a
	// goroutine that something else (an earlier test's timer or delivery)
	// starts meanwhile, and still fails subscriptions that park one each
	// (that would add 100).
	if after := runtime.NumGoroutine(); after > before+5 {
		t.Fatalf("%d goroutines added by 100 pending subscriptions", after-before)
	}
	if got := b.Metrics().QueuedCalls; got != 100 {
		t.Fatalf("queued %d, want 100", got)
	}
	if src.subscribed.Load() != 0 {
		t.Fatal("source subscribed without a permit")
	}
	for _, r := range rs {
		if r.terminated() {
			t.Fatal("a pending subscription terminated")
		}
		r.Dispose()
	}
	b.ReleasePermission()
}

func TestQueuedSubscriptionsAreGrantedInFIFOOrder(t *testing.T) {
	b := newBulkhead(t, queueing)
	b.TryAcquirePermission()
	var mu sync.Mutex
	var order []int
	for i := range 5 {
		src := completable.FromFunc(func(context.Context) error { return nil })
		completable.Bulkhead(b, &ordered{src: src, i: i, mu: &mu, order: &order}).Subscribe(newRecorder(t))
	}
	b.ReleasePermission() // each call completes synchronously, granting the next
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(order, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("subscription order %v, want FIFO", order)
	}
}

// ordered appends i to order when subscribed, then completes at once.
type ordered struct {
	src   completable.Completable
	i     int
	mu    *sync.Mutex
	order *[]int
}

func (o *ordered) Subscribe(obs completable.Observer) {
	o.mu.Lock()
	*o.order = append(*o.order, o.i)
	o.mu.Unlock()
	completable.Complete().Subscribe(obs)
}

func TestPendingSubscriptionFailsWithWaitTimeoutAfterMaxWait(t *testing.T) {
	clock := &testkit.VirtualClock{}
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(clock))
	b.TryAcquirePermission()
	defer b.ReleasePermission()
	src := newProbe(completable.Complete())
	r := newRecorder(t)
	completable.Bulkhead(b, src).Subscribe(r)
	clock.Advance(time.Second - time.Nanosecond)
	if r.terminated() {
		t.Fatal("terminated before MaxWaitDuration")
	}
	clock.Advance(time.Nanosecond) // the timer fires on this goroutine
	_, err := r.result()
	var fe *bulkhead.FullError
	if !errors.As(err, &fe) || fe.Reason != bulkhead.WaitTimeout {
		t.Fatalf("got %v, want a WaitTimeout *FullError", err)
	}
	if src.subscribed.Load() != 0 {
		t.Fatal("source subscribed after the wait expired")
	}
}

func TestDisposeWhilePendingDoesNotConsumePermit(t *testing.T) {
	b := newBulkhead(t, queueing)
	ev := testkit.RecordEvents(t, b)
	b.TryAcquirePermission()
	src := newProbe(completable.Complete())
	r := newRecorder(t)
	completable.Bulkhead(b, src).Subscribe(r)
	r.Dispose()
	if m := b.Metrics(); m.QueuedCalls != 0 {
		t.Fatal("the withdrawn subscription is still queued")
	}
	next := newRecorder(t)
	completable.Bulkhead(b, completable.Complete()).Subscribe(next)
	b.ReleasePermission() // goes to next, not to the withdrawn subscription
	if completed, _ := next.result(); !completed {
		t.Fatal("the next subscription did not get the permit")
	}
	if src.subscribed.Load() != 0 || r.terminated() {
		t.Fatal("the withdrawn subscription was subscribed or signalled")
	}
	if ev.Count(bulkhead.CallCancelled) != 1 || ev.Count(bulkhead.CallRejected) != 0 {
		t.Fatal("want one CallCancelled and no CallRejected")
	}
}

func TestDisposeInsideOnSubscribeAcquiresNothing(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1})
	ev := testkit.RecordEvents(t, b)
	src := newProbe(completable.Complete())
	r := newRecorder(t)
	r.onSubscribe = func(d completable.Disposable) { d.Dispose() }
	completable.Bulkhead(b, src).Subscribe(r)
	if ev.Count(bulkhead.CallPermitted) != 0 || src.subscribed.Load() != 0 || r.terminated() {
		t.Fatal("a subscription disposed inside OnSubscribe acquired, subscribed or signalled")
	}
	if !r.disposable().IsDisposed() {
		t.Fatal("IsDisposed() = false")
	}
}

func TestDisposeAfterQueuedGrantGivesPermitBack(t *testing.T) {
	b := newBulkhead(t, queueing)
	ev := testkit.RecordEvents(t, b)
	b.TryAcquirePermission()
	src := &manual{}
	r := newRecorder(t)
	completable.Bulkhead(b, src).Subscribe(r)
	b.ReleasePermission() // granted: src subscribed on this goroutine
	if src.observer() == nil {
		t.Fatal("source not subscribed after the grant")
	}
	r.Dispose()
	if src.disposed.Load() != 1 {
		t.Fatal("source not disposed")
	}
	if b.Metrics().InFlightCalls != 0 || ev.Count(bulkhead.CallFinished) != 0 {
		t.Fatal("want the permit back with ReleasePermission")
	}
	src.observer().OnComplete() // late signal of a disposed source
	if r.terminated() {
		t.Fatal("signal after Dispose")
	}
}

func TestErrorAfterQueuedGrantGivesPermitBackBeforeSignalling(t *testing.T) {
	b := newBulkhead(t, queueing)
	ev := testkit.RecordEvents(t, b)
	b.TryAcquirePermission()
	src := &manual{}
	r := newRecorder(t)
	inFlightAtSignal := -1
	r.onTerminal = func() { inFlightAtSignal = b.Metrics().InFlightCalls }
	completable.Bulkhead(b, src).Subscribe(r)
	b.ReleasePermission()
	src.observer().OnError(errBoom)
	if _, err := r.result(); err != errBoom {
		t.Fatalf("got %v, want errBoom", err)
	}
	if inFlightAtSignal != 0 {
		t.Fatalf("%d permit(s) held while the observer was signalled, want 0", inFlightAtSignal)
	}
	if ev.Count(bulkhead.CallFinished) != 1 {
		t.Fatal("want the permit back with OnComplete")
	}
}

func TestCompletionAfterQueuedGrantIsDelivered(t *testing.T) {
	b := newBulkhead(t, queueing)
	ev := testkit.RecordEvents(t, b)
	b.TryAcquirePermission()
	c, result, started := held()
	r := newRecorder(t)
	completable.Bulkhead(b, c).Subscribe(r)
	b.ReleasePermission()
	<-started
	result <- nil
	r.wait()
	if completed, err := r.result(); !completed || err != nil {
		t.Fatalf("completed=%v err=%v", completed, err)
	}
	if ev.Count(bulkhead.CallFinished) != 1 {
		t.Fatal("want the permit back with OnComplete")
	}
}

func TestEachSubscriptionAcquiresItsOwnPermit(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 2})
	c, result, started := held()
	src := newProbe(c)
	bc := completable.Bulkhead(b, src)
	rs := []*recorder{newRecorder(t), newRecorder(t), newRecorder(t)}
	for _, r := range rs {
		bc.Subscribe(r)
	}
	<-started
	<-started
	if got := b.Metrics().InFlightCalls; got != 2 {
		t.Fatalf("in flight %d, want 2", got)
	}
	if _, err := rs[2].result(); !errors.Is(err, bulkhead.ErrBulkheadFull) {
		t.Fatalf("third subscription got %v, want ErrBulkheadFull", err)
	}
	result <- nil
	result <- nil
	rs[0].wait()
	rs[1].wait()
	if got := src.subscribed.Load(); got != 2 {
		t.Fatalf("source subscribed %d times, want 2", got)
	}
}

func TestResubscribingAfterFullErrorAcquiresAgain(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1})
	b.TryAcquirePermission()
	bc := completable.Bulkhead(b, completable.Complete())
	first := newRecorder(t)
	bc.Subscribe(first)
	if _, err := first.result(); !errors.Is(err, bulkhead.ErrBulkheadFull) {
		t.Fatalf("got %v, want ErrBulkheadFull", err)
	}
	b.ReleasePermission()
	retry := newRecorder(t)
	bc.Subscribe(retry)
	if completed, _ := retry.result(); !completed {
		t.Fatal("the retry did not acquire the freed permit")
	}
}

// TestSourceSignallingTwiceGivesPermitBackOnce ports resilience4j's
// "release only once": a misbehaving source that completes, then fails,
// gives the permit back once and signals the observer once.
func TestSourceSignallingTwiceGivesPermitBackOnce(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1})
	ev := testkit.RecordEvents(t, b)
	src := &manual{}
	r := newRecorder(t)
	completable.Bulkhead(b, src).Subscribe(r)
	src.observer().OnComplete()
	src.observer().OnError(errBoom) // would panic in Semaphore.OnComplete if released twice
	src.observer().OnComplete()
	if completed, err := r.result(); !completed || err != nil {
		t.Fatalf("completed=%v err=%v, want one completion", completed, err)
	}
	if ev.Count(bulkhead.CallFinished) != 1 {
		t.Fatalf("%d CallFinished events, want 1", ev.Count(bulkhead.CallFinished))
	}
	r.Dispose() // after termination: nothing to give back
	if src.disposed.Load() != 0 || r.disposable().IsDisposed() {
		t.Fatal("Dispose after termination must do nothing")
	}
}

func TestSourceSubscribePanicGivesPermitBack(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1})
	r := newRecorder(t)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the source's panic was swallowed")
			}
		}()
		completable.Bulkhead(b, panicking{}).Subscribe(r)
	}()
	if b.Metrics().InFlightCalls != 0 {
		t.Fatal("permit leaked by a panicking source")
	}
}

type panicking struct{}

func (panicking) Subscribe(completable.Observer) { panic("source failed to subscribe") }

func TestSecondUpstreamDisposableIsDisposed(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1})
	src := &manual{}
	r := newRecorder(t)
	completable.Bulkhead(b, src).Subscribe(r)
	var second manual
	src.observer().OnSubscribe(disposeCounter{&second.disposed})
	if second.disposed.Load() != 1 {
		t.Fatal("a second upstream Disposable was kept")
	}
	r.Dispose()
	if src.disposed.Load() != 1 {
		t.Fatal("the first upstream was not disposed")
	}
}

// TestGrantRacingDisposeReleasesWithoutSubscribing races the grant (another
// goroutine gives the permit back) against the observer's Dispose,
// thousands of times: whoever wins, no permit leaks, the observer gets no
// signal, and a source that was subscribed is disposed.
func TestGrantRacingDisposeReleasesWithoutSubscribing(t *testing.T) {
	b := newBulkhead(t, queueing)
	const runs = 5000
	subscribedRuns := 0
	for range runs {
		b.TryAcquirePermission()
		src := &manual{}
		p := newProbe(src)
		r := newRecorder(t)
		completable.Bulkhead(b, p).Subscribe(r)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); b.ReleasePermission() }()
		go func() { defer wg.Done(); r.Dispose() }()
		wg.Wait()
		switch p.subscribed.Load() {
		case 0:
		case 1:
			subscribedRuns++
			if src.disposed.Load() != 1 {
				t.Fatal("subscribed source not disposed")
			}
		default:
			t.Fatal("source subscribed more than once")
		}
		if r.terminated() {
			t.Fatal("signal after Dispose")
		}
		if m := b.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			t.Fatalf("leak: %+v", m)
		}
	}
	t.Logf("the grant won %d of %d races", subscribedRuns, runs)
}

// TestCompletionRacingDisposeGivesPermitBackOnce races the source's
// completion against Dispose: exactly one of them gives the permit back
// (Semaphore panics on a second release), with OnComplete if the
// completion won and ReleasePermission if Dispose won, and the observer is
// signalled only if the completion won.
func TestCompletionRacingDisposeGivesPermitBackOnce(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1})
	ev := testkit.RecordEvents(t, b)
	const runs = 5000
	completedRuns := 0
	for range runs {
		src := &manual{}
		r := newRecorder(t)
		completable.Bulkhead(b, src).Subscribe(r)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); src.observer().OnComplete() }()
		go func() { defer wg.Done(); r.Dispose() }()
		wg.Wait()
		disposed := r.disposable().IsDisposed()
		if disposed == r.terminated() {
			t.Fatalf("disposed=%v terminated=%v: exactly one must win", disposed, r.terminated())
		}
		if !disposed {
			completedRuns++
		}
		if b.Metrics().InFlightCalls != 0 {
			t.Fatal("permit not given back")
		}
	}
	if got := ev.Count(bulkhead.CallFinished); got != completedRuns {
		t.Fatalf("%d CallFinished for %d completions: releases used the wrong method", got, completedRuns)
	}
	t.Logf("the completion won %d of %d races", completedRuns, runs)
}

// TestDisposeAfterBulkheadGrantedButBeforeSubscribeNeverSubscribes makes the
// grant win the bulkhead's CAS and Dispose win the operator's, in that
// order, deterministically: the Semaphore publishes CallPermitted between
// its grant and the grant callback.
func TestDisposeAfterBulkheadGrantedButBeforeSubscribeNeverSubscribes(t *testing.T) {
	b := newBulkhead(t, queueing)
	ev := testkit.RecordEvents(t, b)
	b.TryAcquirePermission()
	src := newProbe(completable.Complete())
	r := newRecorder(t)
	completable.Bulkhead(b, src).Subscribe(r)
	t.Cleanup(b.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallPermitted {
			r.Dispose()
		}
	}))
	b.ReleasePermission()
	if src.subscribed.Load() != 0 || r.terminated() {
		t.Fatal("source subscribed or observer signalled after Dispose won")
	}
	if b.Metrics().InFlightCalls != 0 || ev.Count(bulkhead.CallFinished) != 0 {
		t.Fatal("want the permit back with ReleasePermission")
	}
}

// TestAwaitThroughFullBulkheadTimesOut runs two calls through a one-permit
// bulkhead in a synctest bubble: the second waits 50 ms of fake time for
// the first (which takes 100 ms) and fails with WaitTimeout; the first
// completes.
func TestAwaitThroughFullBulkheadTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded})
		send := completable.Bulkhead(b, completable.FromFunc(func(ctx context.Context) error {
			select {
			case <-time.After(100 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}))
		first := make(chan error, 1)
		go func() { first <- completable.Await(context.Background(), send) }()
		synctest.Wait() // the first call holds the permit
		start := time.Now()
		err := completable.Await(context.Background(), send)
		var fe *bulkhead.FullError
		if !errors.As(err, &fe) || fe.Reason != bulkhead.WaitTimeout {
			t.Fatalf("second call: %v, want WaitTimeout", err)
		}
		if d := time.Since(start); d != 50*time.Millisecond {
			t.Fatalf("rejected after %v, want 50ms", d)
		}
		if err := <-first; err != nil {
			t.Fatalf("first call: %v", err)
		}
	})
}

// TestAwaitContextEndWhilePendingWithdraws ends the caller's context while
// its call waits for a permit: Await returns the context's error at once,
// the call is withdrawn, and the source never runs.
func TestAwaitContextEndWhilePendingWithdraws(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBulkhead(t, queueing)
		ev := testkit.RecordEvents(t, b)
		b.TryAcquirePermission()
		defer b.ReleasePermission()
		src := newProbe(completable.Complete())
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := completable.Await(ctx, completable.Bulkhead(b, src)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Await = %v, want DeadlineExceeded", err)
		}
		if b.Metrics().QueuedCalls != 0 || src.subscribed.Load() != 0 {
			t.Fatal("the call is still queued or its source ran")
		}
		if ev.Count(bulkhead.CallCancelled) != 1 {
			t.Fatal("want one CallCancelled")
		}
	})
}

// TestExpiryRacingDisposeSignalsAtMostOnce races the expiry of a pending
// acquisition (the virtual clock fires on another goroutine) against
// Dispose: the observer gets the WaitTimeout error only if Dispose lost,
// never after Dispose won, and the source is never subscribed.
func TestExpiryRacingDisposeSignalsAtMostOnce(t *testing.T) {
	clock := &testkit.VirtualClock{}
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(clock))
	b.TryAcquirePermission()
	defer b.ReleasePermission()
	src := newProbe(completable.Complete())
	const runs = 2000
	rejectedRuns := 0
	for range runs {
		r := newRecorder(t)
		completable.Bulkhead(b, src).Subscribe(r)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); clock.Advance(time.Second) }()
		go func() { defer wg.Done(); r.Dispose() }()
		wg.Wait()
		if r.disposable().IsDisposed() {
			if r.terminated() {
				t.Fatal("signal after Dispose won")
			}
			continue
		}
		rejectedRuns++
		var fe *bulkhead.FullError
		if _, err := r.result(); !errors.As(err, &fe) || fe.Reason != bulkhead.WaitTimeout {
			t.Fatalf("got %v, want WaitTimeout", err)
		}
	}
	if src.subscribed.Load() != 0 {
		t.Fatal("source subscribed without a permit")
	}
	if m := b.Metrics(); m.QueuedCalls != 0 {
		t.Fatalf("%d calls still queued", m.QueuedCalls)
	}
	t.Logf("the expiry won %d of %d races", rejectedRuns, runs)
}
