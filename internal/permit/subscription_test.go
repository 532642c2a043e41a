package permit

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// pendingSubscription returns a Subscription whose acquisition is queued
// behind a permit the test holds; grant gives that permit back.
func pendingSubscription(t *testing.T) (s *Subscription, h *handler, up *upstream, grant func()) {
	t.Helper()
	b := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	b.TryAcquirePermission()
	s = &Subscription{}
	h = newHandler()
	up = &upstream{}
	h.onGrant = func(*Guard) { s.SetUpstream(up) }
	s.Start(b, h)
	if b.Metrics().QueuedCalls != 1 {
		t.Fatal("subscription not pending")
	}
	return s, h, up, b.ReleasePermission
}

func TestRequestsWhilePendingAreSummedAndReplayedOnce(t *testing.T) {
	s, h, up, grant := pendingSubscription(t)
	s.Request(3)
	s.Request(4)
	if up.calls.Load() != 0 {
		t.Fatal("requested upstream before it was set")
	}
	grant()
	if up.calls.Load() != 1 || up.requests.Load() != 7 {
		t.Fatalf("replay: %d calls, %d requested; want 1 call of 7", up.calls.Load(), up.requests.Load())
	}
	s.Request(5)
	if up.calls.Load() != 2 || up.requests.Load() != 12 {
		t.Fatalf("after grant: %d calls, %d requested; want the request forwarded", up.calls.Load(), up.requests.Load())
	}
	s.Cancel()
	if up.cancels.Load() != 1 {
		t.Fatal("Cancel after the grant did not cancel upstream")
	}
	if !h.guard.Load().Released() {
		t.Fatal("Cancel did not give the permit back")
	}
}

func TestPendingDemandSaturatesAtMaxInt64(t *testing.T) {
	s, _, up, grant := pendingSubscription(t)
	s.Request(math.MaxInt64 - 1)
	s.Request(2)
	s.Request(math.MaxInt64)
	grant()
	if got := up.requests.Load(); got != math.MaxInt64 {
		t.Fatalf("replayed %d, want math.MaxInt64", got)
	}
	s.Cancel()
}

func TestNoDemandMeansNoReplay(t *testing.T) {
	s, _, up, grant := pendingSubscription(t)
	grant()
	if up.calls.Load() != 0 {
		t.Fatal("Request sent without demand")
	}
	s.Cancel()
}

func TestNonPositiveRequestWhilePendingRejectsAndWithdraws(t *testing.T) {
	s, h, up, grant := pendingSubscription(t)
	s.Request(0)
	if !errors.Is(h.error(), ErrNonPositiveRequest) {
		t.Fatalf("Rejected with %v, want ErrNonPositiveRequest", h.error())
	}
	grant() // the withdrawn acquisition must not take it
	if h.granted.Load() != 0 || up.calls.Load() != 0 {
		t.Fatal("source subscribed after a rule 3.9 violation")
	}
}

func TestNonPositiveRequestBeforeStartIsReportedByStart(t *testing.T) {
	b := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1})
	events := recordEvents(b)
	var s Subscription
	s.Request(-2)
	h := newHandler()
	s.Start(b, h)
	err := h.error()
	if !errors.Is(err, ErrNonPositiveRequest) || h.rejected.Load() != 1 {
		t.Fatalf("Rejected %d times with %v", h.rejected.Load(), err)
	}
	if want := "Request(-2)"; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "3.9") {
		t.Fatalf("error %q does not quote %s and rule 3.9", err, want)
	}
	if len(events()) != 0 {
		t.Fatalf("a permit was requested: %v", events())
	}
}

func TestNonPositiveRequestAfterGrantIsForwardedToSource(t *testing.T) {
	s, h, up, grant := pendingSubscription(t)
	grant()
	s.Request(-7)
	if up.bad.Load() != -7 {
		t.Fatalf("upstream got bad request %d, want -7", up.bad.Load())
	}
	if h.rejected.Load() != 0 {
		t.Fatal("Rejected ran after the grant")
	}
	s.Cancel()
}

func TestCancelBeforeStartAcquiresNothing(t *testing.T) {
	b := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1})
	events := recordEvents(b)
	var s Subscription
	s.Request(1)
	s.Cancel()
	s.Start(b, newHandler())
	if len(events()) != 0 {
		t.Fatalf("events after Cancel then Start: %v", events())
	}
	if !s.Cancelled() {
		t.Fatal("Cancelled() = false")
	}
}

func TestCancelAfterDeliveryCompletesPermit(t *testing.T) {
	b := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1})
	events := recordEvents(b)
	var s Subscription
	up := &upstream{}
	h := newHandler()
	h.onGrant = func(g *Guard) { s.SetUpstream(up) }
	s.Start(b, h)
	h.guard.Load().MarkRan()
	s.Cancel()
	if count(events(), bulkhead.CallFinished) != 1 {
		t.Fatalf("events %v: want CallFinished after cancel of a call that ran", events())
	}
}

func TestSecondUpstreamIsCancelled(t *testing.T) {
	b := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1})
	var s Subscription
	first, second := &upstream{}, &upstream{}
	h := newHandler()
	h.onGrant = func(*Guard) { s.SetUpstream(first) }
	s.Start(b, h)
	if s.SetUpstream(second) {
		t.Fatal("a second upstream was accepted (rule 2.5)")
	}
	if second.cancels.Load() != 1 || first.cancels.Load() != 0 {
		t.Fatal("wrong upstream cancelled")
	}
	s.Request(1)
	if first.requests.Load() != 1 || second.requests.Load() != 0 {
		t.Fatal("demand went to the wrong upstream")
	}
	s.Cancel()
}

func TestPanicInsideUpstreamRequestCancelsAndReleases(t *testing.T) {
	b := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1})
	events := recordEvents(b)
	var s Subscription
	up := &upstream{}
	h := newHandler()
	h.onGrant = func(*Guard) { s.SetUpstream(up) }
	up.onRequest = func(int64) {
		h.guard.Load().MarkRan() // an element reached the subscriber, which panicked
		panic("subscriber bug")
	}
	s.Start(b, h)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic was swallowed")
			}
		}()
		s.Request(1)
	}()
	if up.cancels.Load() != 1 {
		t.Fatal("upstream not cancelled after the panic")
	}
	if !h.guard.Load().Released() || count(events(), bulkhead.CallFinished) != 1 {
		t.Fatal("permit not given back with OnComplete after the panic")
	}
	s.Cancel() // idempotent: no second cancel, no second release
	if up.cancels.Load() != 1 {
		t.Fatal("upstream cancelled twice")
	}
}

// TestCancelRacingGrantCancelsUpstreamExactlyOnce hammers the race between
// the grant (which subscribes the source and sets the upstream on the
// releasing goroutine) and Cancel, with Requests from a third goroutine:
// the upstream is cancelled exactly once when the source was subscribed,
// Requests to it never overlap, and every permit comes back.
func TestCancelRacingGrantCancelsUpstreamExactlyOnce(t *testing.T) {
	b := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	for i := range 5000 {
		b.TryAcquirePermission()
		s := &Subscription{}
		h := newHandler()
		up := &upstream{}
		var set bool
		h.onGrant = func(*Guard) { set = s.SetUpstream(up) }
		s.Start(b, h)
		var wg sync.WaitGroup
		wg.Add(3)
		go func() { defer wg.Done(); b.ReleasePermission() }()
		go func() { defer wg.Done(); s.Cancel() }()
		go func() {
			defer wg.Done()
			for range 3 {
				s.Request(1)
			}
		}()
		wg.Wait()
		if h.granted.Load() == 1 {
			if got := up.cancels.Load(); got != 1 {
				t.Fatalf("iteration %d: granted (set=%v) but upstream cancelled %d times", i, set, got)
			}
		} else if up.calls.Load()+up.cancels.Load() != 0 {
			t.Fatalf("iteration %d: upstream touched without a grant", i)
		}
		if up.overlaps.Load() != 0 {
			t.Fatalf("iteration %d: overlapping calls to upstream", i)
		}
		if m := b.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			t.Fatalf("iteration %d: leak %+v", i, m)
		}
	}
}

// TestConcurrentRequestsAndReplayAreSerialAndLoseNoDemand requests from
// several goroutines while the grant replays: the upstream receives the
// total demand, in calls that never overlap.
func TestConcurrentRequestsAndReplayAreSerialAndLoseNoDemand(t *testing.T) {
	for range 1000 {
		s, _, up, grant := pendingSubscription(t)
		var wg sync.WaitGroup
		const workers, each = 4, 25
		wg.Add(workers + 1)
		for range workers {
			go func() {
				defer wg.Done()
				for range each {
					s.Request(1)
				}
			}()
		}
		go func() { defer wg.Done(); grant() }()
		wg.Wait()
		if got := up.requests.Load(); got != workers*each {
			t.Fatalf("upstream got %d, want %d", got, workers*each)
		}
		if up.overlaps.Load() != 0 {
			t.Fatal("overlapping calls to upstream")
		}
		s.Cancel()
	}
}
