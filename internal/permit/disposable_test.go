package permit

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

func TestDisposableGrantedAtOnceRunsGrantedOnCaller(t *testing.T) {
	s := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1})
	h := newHandler()
	var d Disposable
	d.Start(s, h)
	if h.granted.Load() != 1 {
		t.Fatal("Granted did not run inside Start")
	}
	if s.Metrics().InFlightCalls != 1 {
		t.Fatal("no permit held after the grant")
	}
	var disposed atomic.Int32
	if !d.SetUpstream(func() { disposed.Add(1) }) {
		t.Fatal("SetUpstream refused an upstream after the grant")
	}
	d.Dispose()
	d.Dispose()
	if got := disposed.Load(); got != 1 {
		t.Fatalf("upstream disposed %d times, want 1", got)
	}
	if !d.IsDisposed() {
		t.Fatal("IsDisposed() = false after Dispose")
	}
}

func TestDisposableRejectedAtOnceHoldsNoPermit(t *testing.T) {
	s := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1})
	s.TryAcquirePermission()
	defer s.ReleasePermission()
	h := newHandler()
	var d Disposable
	d.Start(s, h)
	var fe *bulkhead.FullError
	if !errors.As(h.error(), &fe) || fe.Reason != bulkhead.NoWait {
		t.Fatalf("Rejected with %v, want a NoWait *FullError", h.error())
	}
	if h.granted.Load() != 0 {
		t.Fatal("Granted ran after a rejection")
	}
	d.Dispose() // nothing to give back
	if d.IsDisposed() {
		t.Fatal("IsDisposed() = true for a rejected subscription")
	}
}

func TestDisposeWhilePendingWithdrawsWithoutConsumingPermit(t *testing.T) {
	s := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	events := recordEvents(s)
	s.TryAcquirePermission()
	h := newHandler()
	var d Disposable
	d.Start(s, h)
	if s.Metrics().QueuedCalls != 1 {
		t.Fatal("the acquisition is not queued")
	}
	d.Dispose()
	s.ReleasePermission()
	if h.granted.Load()+h.rejected.Load() != 0 {
		t.Fatal("a Handler method ran after Dispose while pending")
	}
	if m := s.Metrics(); m.QueuedCalls != 0 || m.InFlightCalls != 0 {
		t.Fatalf("metrics after withdraw: %+v", m)
	}
	ev := events()
	if count(ev, bulkhead.CallCancelled) != 1 || count(ev, bulkhead.CallRejected) != 0 {
		t.Fatalf("events %v: want one CallCancelled and no CallRejected", ev)
	}
}

func TestDisposableGrantedLaterRunsGrantedOnReleasingGoroutine(t *testing.T) {
	s := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	s.TryAcquirePermission()
	h := newHandler()
	var d Disposable
	d.Start(s, h)
	if h.granted.Load() != 0 {
		t.Fatal("granted while the permit is held elsewhere")
	}
	s.FinishCall() // the grant is delivered on this goroutine
	if h.granted.Load() != 1 {
		t.Fatal("Granted did not run on the releasing goroutine")
	}
	d.SetUpstream(func() {})
	h.guard.Load().MarkRan()
	h.guard.Load().Complete()
	d.Dispose() // after completion: nothing more to give back
}

func TestDisposeBeforeStartAcquiresNothing(t *testing.T) {
	s := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1})
	events := recordEvents(s)
	h := newHandler()
	var d Disposable
	d.Dispose()
	d.Start(s, h)
	if len(events()) != 0 || h.granted.Load()+h.rejected.Load() != 0 {
		t.Fatalf("events %v after Start on a disposed Disposable", events())
	}
}

func TestDisposeBetweenGrantAndSetUpstreamDisposesUpstreamOnSet(t *testing.T) {
	s := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1})
	var d Disposable
	h := newHandler()
	var disposed atomic.Int32
	h.onGrant = func(*Guard) {
		d.Dispose() // the subscriber disposes while the source is being subscribed
		if d.SetUpstream(func() { disposed.Add(1) }) {
			t.Error("SetUpstream accepted an upstream after Dispose")
		}
	}
	d.Start(s, h)
	if disposed.Load() != 1 {
		t.Fatalf("upstream disposed %d times, want 1", disposed.Load())
	}
}

func TestDisposableWaitTimeoutIsRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded})
		s.TryAcquirePermission()
		defer s.ReleasePermission()
		h := newHandler()
		var d Disposable
		d.Start(s, h)
		time.Sleep(999 * time.Millisecond) // virtual time
		synctest.Wait()
		if h.rejected.Load() != 0 {
			t.Fatal("rejected before MaxWaitDuration")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		var fe *bulkhead.FullError
		if !errors.As(h.error(), &fe) || fe.Reason != bulkhead.WaitTimeout {
			t.Fatalf("Rejected with %v, want WaitTimeout", h.error())
		}
	})
}

// TestDisposeRacingGrantNeverLeaksAndNeverSubscribesAfterCancel runs the
// grant/Dispose race many times: either Dispose withdrew the acquisition, or
// the grant won and the upstream (if set) is disposed exactly once; every
// permit comes back, and Granted never runs after a Dispose that won.
func TestDisposeRacingGrantNeverLeaksAndNeverSubscribesAfterCancel(t *testing.T) {
	s := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	for range 5000 {
		s.TryAcquirePermission()
		var d Disposable
		h := newHandler()
		var disposed atomic.Int32
		h.onGrant = func(*Guard) { d.SetUpstream(func() { disposed.Add(1) }) }
		d.Start(s, h)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); s.ReleasePermission() }()
		go func() { defer wg.Done(); d.Dispose() }()
		wg.Wait()
		if h.rejected.Load() != 0 {
			t.Fatalf("rejected: %v", h.error())
		}
		if h.granted.Load() == 1 && disposed.Load() != 1 {
			t.Fatalf("granted but upstream disposed %d times", disposed.Load())
		}
		if h.granted.Load() == 0 && disposed.Load() != 0 {
			t.Fatal("upstream disposed without a grant")
		}
		if m := s.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			t.Fatalf("leak after race: %+v", m)
		}
	}
}

func TestStartPanicsOnNilArguments(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Start(nil, h) did not panic")
		}
	}()
	var d Disposable
	d.Start(nil, newHandler())
}

// TestDisposeAfterBulkheadGrantedButBeforeCallbackReleasesUnused pins the
// narrow side of the race deterministically: the Semaphore publishes
// CallPermitted after its CAS granted the permit and before the grant
// callback runs, so a Dispose from the listener finds the acquisition
// already granted (Acquisition.Cancel fails) but wins the gate's CAS. The
// permit must come back with ReleasePermission and Granted must never run.
func TestDisposeAfterBulkheadGrantedButBeforeCallbackReleasesUnused(t *testing.T) {
	s := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	events := recordEvents(s)
	s.TryAcquirePermission()
	var d Disposable
	h := newHandler()
	d.Start(s, h)
	remove := s.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallPermitted {
			d.Dispose()
		}
	})
	defer remove()
	s.ReleasePermission()
	if h.granted.Load() != 0 {
		t.Fatal("Granted ran although Dispose won the gate")
	}
	if m := s.Metrics(); m.InFlightCalls != 0 {
		t.Fatal("the permit granted after Dispose was not given back")
	}
	if n := count(events(), bulkhead.CallFinished); n != 0 {
		t.Fatal("given back with OnComplete, want ReleasePermission")
	}
}
