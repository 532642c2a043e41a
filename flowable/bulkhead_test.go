package flowable_test

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

var queueing = bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded}

func TestSubscribeDoesNotBlockOrParkGoroutinesWhenFull(t *testing.T) {
	b := newBulkhead(t, queueing)
	b.TryAcquirePermission()
	src := newProbe(flowable.Range(0, 3))
	before := runtime.NumGoroutine()
	subs := make([]*recorder[int], 100)
	for i := range subs {
		subs[i] = newRecorder[int](t, 10)
		flowable.Bulkhead(b, src).Subscribe(subs[i]) // returns although no permit is free
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("%d goroutines added by 100 pending subscriptions", after-before)
	}
	if got := b.Metrics().QueuedCalls; got != 100 {
		t.Fatalf("queued %d, want 100", got)
	}
	if src.subscribed.Load() != 0 {
		t.Fatal("source subscribed without a permit")
	}
	for _, r := range subs {
		if _, err, done := r.snapshot(); err != nil || done {
			t.Fatal("a pending subscriber got a terminal signal")
		}
		r.Cancel()
	}
	b.ReleasePermission()
}

func TestGrantedAtOnceSubscribesSourceOnCallingGoroutine(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1})
	ev := testkit.RecordEvents(t, b)
	r := newRecorder[int](t, 10)
	flowable.Bulkhead(b, flowable.Range(0, 3)).Subscribe(r)
	items, err, completed := r.snapshot() // no wait: all happened inside Subscribe
	if !slices.Equal(items, []int{0, 1, 2}) || err != nil || !completed {
		t.Fatalf("got %v, %v, completed=%v", items, err, completed)
	}
	if ev.Count(bulkhead.CallFinished) != 1 {
		t.Fatal("permit not given back with OnComplete after the source completed")
	}
}

func TestRejectedAtOnceSignalsFullErrorAndNeverSubscribesSource(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1})
	b.TryAcquirePermission()
	defer b.ReleasePermission()
	src := newProbe(flowable.Just(1))
	r := newRecorder[int](t, 1)
	flowable.Bulkhead(b, src).Subscribe(r)
	_, err, _ := r.snapshot()
	var fe *bulkhead.FullError
	if !errors.As(err, &fe) || fe.Reason != bulkhead.NoWait || fe.Name != "partner" {
		t.Fatalf("got %v, want *FullError{partner, NoWait}", err)
	}
	if src.subscribed.Load() != 0 {
		t.Fatal("source subscribed after a rejection")
	}
}

func TestRequestsBeforeAndAfterGrantAreBothHonoured(t *testing.T) {
	b := newBulkhead(t, queueing)
	b.TryAcquirePermission()
	r := newRecorder[int](t, 2)
	flowable.Bulkhead(b, flowable.Range(0, 100)).Subscribe(r)
	r.Request(3)
	if r.count() != 0 {
		t.Fatal("elements before the grant")
	}
	b.ReleasePermission() // grant: the 5 pending requests are replayed
	if got := r.count(); got != 5 {
		t.Fatalf("after the grant: %d elements, want 5", got)
	}
	r.Request(4)
	if got := r.count(); got != 9 {
		t.Fatalf("after a later Request(4): %d elements, want 9", got)
	}
	r.Cancel()
}

func TestQueuedSubscriptionsAreGrantedInFIFOOrder(t *testing.T) {
	b := newBulkhead(t, queueing)
	b.TryAcquirePermission()
	var mu sync.Mutex
	var order []int
	for i := range 5 {
		flowable.Bulkhead(b, flowable.Just(i)).Subscribe(flowable.Funcs[int]{
			Next: func(v int) { mu.Lock(); order = append(order, v); mu.Unlock() },
		})
	}
	b.ReleasePermission()
	if !slices.Equal(order, seq(0, 5)) {
		t.Fatalf("grant order %v, want FIFO", order)
	}
}

func TestPendingSubscriptionFailsWithWaitTimeoutAfterMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded})
		b.TryAcquirePermission()
		defer b.ReleasePermission()
		src := newProbe(flowable.Just(1))
		r := newRecorder[int](t, 1)
		flowable.Bulkhead(b, src).Subscribe(r)
		time.Sleep(time.Second - time.Nanosecond)
		synctest.Wait()
		if _, err, _ := r.snapshot(); err != nil {
			t.Fatalf("failed before MaxWaitDuration: %v", err)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		_, err, _ := r.snapshot()
		var fe *bulkhead.FullError
		if !errors.As(err, &fe) || fe.Reason != bulkhead.WaitTimeout {
			t.Fatalf("got %v, want WaitTimeout", err)
		}
		if src.subscribed.Load() != 0 {
			t.Fatal("source subscribed after the wait expired")
		}
	})
}

func TestCancelWhilePendingDoesNotConsumePermit(t *testing.T) {
	b := newBulkhead(t, queueing)
	ev := testkit.RecordEvents(t, b)
	b.TryAcquirePermission()
	src := newProbe(flowable.Just(1))
	r := newRecorder[int](t, 1)
	flowable.Bulkhead(b, src).Subscribe(r)
	r.Cancel()
	b.ReleasePermission()
	if m := b.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
		t.Fatalf("after cancel while pending: %+v", m)
	}
	if src.subscribed.Load() != 0 {
		t.Fatal("source subscribed after cancel")
	}
	if ev.Count(bulkhead.CallCancelled) != 1 || ev.Count(bulkhead.CallRejected) != 0 {
		t.Fatal("want one CallCancelled and no CallRejected event")
	}
	if _, err, done := r.snapshot(); err != nil || done {
		t.Fatal("signal after cancel")
	}
}

func TestCancelInsideOnSubscribeAcquiresNothing(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1})
	ev := testkit.RecordEvents(t, b)
	flowable.Bulkhead(b, flowable.Just(1)).Subscribe(flowable.Funcs[int]{
		Start: func(s flowable.Subscription) { s.Cancel() },
	})
	if ev.Count(bulkhead.CallPermitted)+ev.Count(bulkhead.CallCancelled) != 0 {
		t.Fatal("a permit was requested for a subscription cancelled in OnSubscribe")
	}
}

func TestCancelAfterQueuedGrantReleasesPermit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		delivered int
		finished  int // CallFinished events: OnComplete vs ReleasePermission
	}{
		{"before any element", 0, 0},
		{"after an element", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBulkhead(t, queueing)
			ev := testkit.RecordEvents(t, b)
			b.TryAcquirePermission()
			src := newProbe(flowable.Range(0, 10))
			r := newRecorder[int](t, int64(tc.delivered))
			flowable.Bulkhead(b, src).Subscribe(r)
			b.ReleasePermission()
			if src.subscribed.Load() != 1 || r.count() != tc.delivered {
				t.Fatal("the queued grant did not subscribe the source")
			}
			r.Cancel()
			if src.cancelled.Load() != 1 {
				t.Fatal("source not cancelled")
			}
			if got := ev.Count(bulkhead.CallFinished); got != tc.finished {
				t.Fatalf("CallFinished events %d, want %d", got, tc.finished)
			}
		})
	}
}

func TestUpstreamErrorAfterQueuedGrantReleasesPermit(t *testing.T) {
	b := newBulkhead(t, queueing)
	ev := testkit.RecordEvents(t, b)
	b.TryAcquirePermission()
	boom := errors.New("partner down")
	r := newRecorder[int](t, 1)
	flowable.Bulkhead(b, flowable.Error[int](boom)).Subscribe(r)
	b.ReleasePermission()
	if _, err, _ := r.snapshot(); err != boom {
		t.Fatalf("got %v", err)
	}
	if ev.Count(bulkhead.CallFinished) != 1 {
		t.Fatal("permit not given back with OnComplete after the upstream error")
	}
}

func TestAllElementsOfQueuedFlowableAreDelivered(t *testing.T) {
	b := newBulkhead(t, queueing)
	b.TryAcquirePermission()
	r := newRecorder[int](t, math.MaxInt64)
	flowable.Bulkhead(b, flowable.Range(0, 10000)).Subscribe(r)
	go b.ReleasePermission() // grant on another goroutine
	r.wait()
	items, err, completed := r.snapshot()
	if !slices.Equal(items, seq(0, 10000)) || err != nil || !completed {
		t.Fatalf("got %d items, %v, completed=%v", len(items), err, completed)
	}
}

func TestNonPositiveRequestWhilePendingWithdrawsAndSignalsError(t *testing.T) {
	b := newBulkhead(t, queueing)
	ev := testkit.RecordEvents(t, b)
	b.TryAcquirePermission()
	src := newProbe(flowable.Just(1))
	r := newRecorder[int](t, 0)
	flowable.Bulkhead(b, src).Subscribe(r)
	r.Request(0)
	if _, err, _ := r.snapshot(); !errors.Is(err, flowable.ErrNonPositiveRequest) {
		t.Fatalf("got %v", err)
	}
	b.ReleasePermission()
	if src.subscribed.Load() != 0 || ev.Count(bulkhead.CallCancelled) != 1 {
		t.Fatal("the pending acquisition was not withdrawn")
	}
}

func TestNonPositiveRequestAfterGrantIsSignalledBySource(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1})
	ev := testkit.RecordEvents(t, b)
	r := newRecorder[int](t, 1)
	flowable.Bulkhead(b, flowable.Range(0, 10)).Subscribe(r)
	r.Request(-1)
	items, err, _ := r.snapshot()
	if len(items) != 1 || !errors.Is(err, flowable.ErrNonPositiveRequest) {
		t.Fatalf("got %v, %v", items, err)
	}
	if ev.Count(bulkhead.CallFinished) != 1 {
		t.Fatal("permit not given back after the rule 3.9 error")
	}
}

func TestPanicInOnNextDoesNotLeakPermit(t *testing.T) {
	for _, tc := range []struct {
		name         string
		queued       bool
		requestLater bool // request after the grant instead of in OnSubscribe
	}{
		{"granted at once", false, false},
		{"granted from the queue", true, false},
		{"request after the grant", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBulkhead(t, queueing)
			ev := testkit.RecordEvents(t, b)
			if tc.queued {
				b.TryAcquirePermission()
			}
			src := newProbe(flowable.Range(0, 10))
			var sub flowable.Subscription
			s := flowable.Funcs[int]{Next: func(int) { panic("subscriber bug") }}
			if tc.requestLater {
				s.Start = func(s flowable.Subscription) { sub = s }
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("the panic was swallowed")
					}
				}()
				flowable.Bulkhead(b, src).Subscribe(s)
				if tc.queued {
					b.ReleasePermission() // the grant runs the source here
				}
				if tc.requestLater {
					sub.Request(1)
				}
			}()
			if src.cancelled.Load() != 1 {
				t.Fatal("source not cancelled after the panic")
			}
			if b.Metrics().InFlightCalls != 0 || ev.Count(bulkhead.CallFinished) != 1 {
				t.Fatal("permit not given back with OnComplete after a panic in OnNext")
			}
		})
	}
}

func TestEachSubscriptionAcquiresItsOwnPermit(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 2})
	p := flowable.Bulkhead(b, flowable.Never[int]())
	rs := make([]*recorder[int], 3)
	for i := range rs {
		rs[i] = newRecorder[int](t, 1)
		p.Subscribe(rs[i])
	}
	if got := b.Metrics().InFlightCalls; got != 2 {
		t.Fatalf("in flight %d, want 2", got)
	}
	if _, err, _ := rs[2].snapshot(); !errors.Is(err, bulkhead.ErrBulkheadFull) {
		t.Fatalf("third subscription got %v, want ErrBulkheadFull", err)
	}
	rs[0].Cancel()
	rs[1].Cancel()
}

// TestGrantRacingCancelReleasesWithoutSubscribing races the grant (another
// goroutine gives the permit back) against the subscriber's Cancel, in the
// spirit of Reactor's shouldBeSerialIfRacy: whoever wins, no permit leaks,
// the subscriber gets no signal, and a source that was subscribed is
// cancelled.
func TestGrantRacingCancelReleasesWithoutSubscribing(t *testing.T) {
	b := newBulkhead(t, queueing)
	subscribedRuns := 0
	for range 5000 {
		b.TryAcquirePermission()
		src := newProbe(flowable.Never[int]())
		r := newRecorder[int](t, 1)
		flowable.Bulkhead(b, src).Subscribe(r)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); b.ReleasePermission() }()
		go func() { defer wg.Done(); r.Cancel() }()
		wg.Wait()
		if n := src.subscribed.Load(); n == 1 {
			subscribedRuns++
			if src.cancelled.Load() != 1 {
				t.Fatal("subscribed source not cancelled")
			}
		} else if n != 0 {
			t.Fatalf("source subscribed %d times", n)
		}
		if _, err, done := r.snapshot(); err != nil || done {
			t.Fatalf("signal after cancel: %v", err)
		}
		if m := b.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			t.Fatalf("leak: %+v", m)
		}
	}
	t.Logf("grant won %d of 5000 races", subscribedRuns)
}

// TestSignalsAreSerialWhenGrantArrivesOnAnotherGoroutine requests from one
// goroutine while the grant arrives on another and the source emits from a
// third; the recorder fails on overlapping signals or excess elements.
func TestSignalsAreSerialWhenGrantArrivesOnAnotherGoroutine(t *testing.T) {
	b := newBulkhead(t, queueing)
	for range 500 {
		b.TryAcquirePermission()
		var producers sync.WaitGroup
		src := flowable.Create(func(e flowable.Emitter[int]) {
			producers.Add(1)
			go func() {
				defer producers.Done()
				for i := range 50 {
					if !e.Next(i) {
						return
					}
				}
				e.Complete()
			}()
		})
		r := newRecorder[int](t, 0)
		flowable.Bulkhead(b, src).Subscribe(r)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 50 {
				r.Request(1)
			}
		}()
		go func() { defer wg.Done(); b.ReleasePermission() }()
		wg.Wait()
		r.wait()
		producers.Wait()
		if items, _, completed := r.snapshot(); !slices.Equal(items, seq(0, 50)) || !completed {
			t.Fatalf("got %v completed=%v", items, completed)
		}
	}
}

func TestMillionElementsThroughOnePermitRunInBoundedMemory(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1})
	const n = 1_000_000
	p := flowable.Bulkhead(b, flowable.Range(0, n))
	var sum, count int
	allocs := testing.AllocsPerRun(1, func() {
		sum, count = 0, 0
		p.Subscribe(flowable.Funcs[int]{
			Start: func(s flowable.Subscription) { s.Request(n) },
			Next:  func(v int) { sum += v; count++ },
		})
	})
	if count != n || sum != n*(n-1)/2 {
		t.Fatalf("delivered %d elements summing to %d", count, sum)
	}
	if allocs > 20 {
		t.Fatalf("%v allocations for %d elements: memory grows with the stream", allocs, n)
	}
}

// TestCancelAfterBulkheadGrantedButBeforeSubscribeNeverSubscribes makes the
// grant win the bulkhead's CAS and the Cancel win the operator's, in that
// order, deterministically: the Semaphore publishes CallPermitted between
// its grant and the grant callback.
func TestCancelAfterBulkheadGrantedButBeforeSubscribeNeverSubscribes(t *testing.T) {
	b := newBulkhead(t, queueing)
	ev := testkit.RecordEvents(t, b)
	b.TryAcquirePermission()
	src := newProbe(flowable.Just(1))
	r := newRecorder[int](t, 1)
	flowable.Bulkhead(b, src).Subscribe(r)
	remove := b.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallPermitted {
			r.Cancel()
		}
	})
	defer remove()
	b.ReleasePermission()
	if src.subscribed.Load() != 0 {
		t.Fatal("source subscribed after Cancel won")
	}
	if b.Metrics().InFlightCalls != 0 || ev.Count(bulkhead.CallFinished) != 0 {
		t.Fatal("permit not given back with ReleasePermission")
	}
}
