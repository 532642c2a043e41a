package redis_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

func TestGrantsUpToTheFleetLimitThenTheOldestWaiterAcrossReplicas(t *testing.T) {
	srv := sharedServer(t)
	cfg := fastStore()
	cfg.KeyPrefix = prefixFor(t)
	sa, _ := newStore(t, srv, cfg)
	sb, _ := newStore(t, srv, cfg)
	a := newBulkhead(t, sa, "partner", fleetConfig(2, 5*time.Second))
	b := newBulkhead(t, sb, "partner", fleetConfig(2, 5*time.Second))

	h1, h2 := a.Acquire(), a.Acquire()
	for _, h := range []*rxredis.Permit{h1, h2} {
		if err := await(t, h.Acquisition()); err != nil {
			t.Fatalf("grant within the limit: %v", err)
		}
	}
	// Waiters in the order b, a, b: each must get its ticket before the next
	// one asks, so that the order is defined.
	w1 := b.Acquire()
	eventually(t, outcomeTimeout, "w1 queued in Redis", func() bool { m, _ := b.FleetMetrics(context.Background()); return m.QueuedCalls == 1 })
	w2 := a.Acquire()
	eventually(t, outcomeTimeout, "w2 queued in Redis", func() bool { m, _ := b.FleetMetrics(context.Background()); return m.QueuedCalls == 2 })
	w3 := b.Acquire()
	eventually(t, outcomeTimeout, "w3 queued in Redis", func() bool { m, _ := b.FleetMetrics(context.Background()); return m.QueuedCalls == 3 })

	h1.Finish()
	if err := await(t, w1.Acquisition()); err != nil {
		t.Fatalf("oldest waiter (other replica): %v", err)
	}
	if w2.Acquisition().Err() != bulkhead.ErrPending || w3.Acquisition().Err() != bulkhead.ErrPending {
		t.Fatal("a younger waiter was granted before the oldest")
	}
	h2.Finish()
	if err := await(t, w2.Acquisition()); err != nil {
		t.Fatalf("second waiter: %v", err)
	}
	if w3.Acquisition().Err() != bulkhead.ErrPending {
		t.Fatal("third waiter granted with no free permit")
	}
	w1.Finish()
	if err := await(t, w3.Acquisition()); err != nil {
		t.Fatalf("third waiter: %v", err)
	}
	l2, _ := w2.Lease()
	l3, _ := w3.Lease()
	l1, _ := h1.Lease()
	if l1 != (rxredis.Lease{}) {
		t.Errorf("Lease of a permit given back = %v, want none", l1)
	}
	if !(l2.Token > 0 && l3.Token > l2.Token) {
		t.Errorf("fencing tokens %d then %d: want increasing", l2.Token, l3.Token)
	}
	w2.Finish()
	w3.Finish()
	eventually(t, outcomeTimeout, "fleet idle", func() bool {
		m, err := a.FleetMetrics(context.Background())
		return err == nil && m.InFlightCalls == 0 && m.QueuedCalls == 0
	})
}

func TestNoWaitRejectsWithFullErrorWhenTheFleetIsFull(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	b := newBulkhead(t, s, "p", fleetConfig(1, 0))
	held := b.AcquirePermissionAsync()
	if err := await(t, held); err != nil {
		t.Fatal(err)
	}
	err := await(t, b.AcquirePermissionAsync())
	var fe *bulkhead.FullError
	if !errors.As(err, &fe) || fe.Reason != bulkhead.NoWait || fe.Name != "p" {
		t.Fatalf("err = %v, want FullError(NoWait) naming p", err)
	}
	if errors.Is(err, rxredis.ErrUnavailable) {
		t.Error("a full fleet must not look like an unavailable store")
	}
	b.FinishCall()
}

func TestCancelWithdrawsTheTicketSoTheNextWaiterIsServed(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	b := newBulkhead(t, s, "p", fleetConfig(1, 5*time.Second))
	log := testkit.RecordEvents(t, b)
	if err := await(t, b.AcquirePermissionAsync()); err != nil {
		t.Fatal(err)
	}
	w1 := b.AcquirePermissionAsync()
	w2 := b.AcquirePermissionAsync()
	eventually(t, outcomeTimeout, "both queued", func() bool { m, _ := b.FleetMetrics(context.Background()); return m.QueuedCalls == 2 })
	if !w1.Cancel() {
		t.Fatal("Cancel of a waiter lost")
	}
	if !errors.Is(w1.Err(), bulkhead.ErrCancelled) {
		t.Fatalf("cancelled waiter: %v", w1.Err())
	}
	eventually(t, outcomeTimeout, "ticket withdrawn", func() bool { m, _ := b.FleetMetrics(context.Background()); return m.QueuedCalls == 1 })
	b.FinishCall()
	if err := await(t, w2); err != nil {
		t.Fatalf("next waiter: %v", err)
	}
	b.FinishCall()
	want := []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallCancelled, bulkhead.CallFinished, bulkhead.CallPermitted, bulkhead.CallFinished}
	if got := log.Types(); !equalTypes(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

func equalTypes(a, b []bulkhead.EventType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMaxWaitDurationRejectsOnTheVirtualClockAndWithdrawsTheTicket(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	cfg := fastStore()
	cfg.Clock = clock
	s, _ := newStore(t, sharedServer(t), cfg)
	b := newBulkhead(t, s, "p", fleetConfig(1, time.Hour))
	if err := await(t, b.AcquirePermissionAsync()); err != nil {
		t.Fatal(err)
	}
	w := b.AcquirePermissionAsync()
	eventually(t, outcomeTimeout, "queued", func() bool { m, _ := b.FleetMetrics(context.Background()); return m.QueuedCalls == 1 })
	clock.Advance(time.Hour - time.Nanosecond)
	if w.Err() != bulkhead.ErrPending {
		t.Fatalf("rejected before MaxWaitDuration: %v", w.Err())
	}
	clock.Advance(time.Nanosecond)
	var fe *bulkhead.FullError
	if err := await(t, w); !errors.As(err, &fe) || fe.Reason != bulkhead.WaitTimeout {
		t.Fatalf("err = %v, want WaitTimeout", err)
	}
	eventually(t, outcomeTimeout, "ticket withdrawn", func() bool { m, _ := b.FleetMetrics(context.Background()); return m.QueuedCalls == 0 })
	b.FinishCall()
}

func TestMaxQueuedCallsBoundsThisProcesssQueue(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	cfg := fleetConfig(1, 5*time.Second)
	cfg.MaxQueuedCalls = 2
	b := newBulkhead(t, s, "p", cfg)
	if err := await(t, b.AcquirePermissionAsync()); err != nil {
		t.Fatal(err)
	}
	w := []*bulkhead.Acquisition{b.AcquirePermissionAsync(), b.AcquirePermissionAsync()}
	eventually(t, outcomeTimeout, "queued", func() bool {
		return b.Metrics().QueuedCalls == 2 && func() bool { m, _ := b.FleetMetrics(context.Background()); return m.QueuedCalls == 2 }()
	})
	var fe *bulkhead.FullError
	if err := await(t, b.AcquirePermissionAsync()); !errors.As(err, &fe) || fe.Reason != bulkhead.QueueFull {
		t.Fatalf("third waiter: %v, want QueueFull", err)
	}
	for _, a := range w {
		a.Cancel()
	}
	b.FinishCall()
}

func TestLeaseOfGivesTheTokenToACallerThatOnlyHasTheInterface(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	var bh bulkhead.Bulkhead = newBulkhead(t, s, "p", fleetConfig(3, time.Second))
	var last int64
	for range 3 {
		a := bh.AcquirePermissionAsync()
		if err := await(t, a); err != nil {
			t.Fatal(err)
		}
		l, ok := rxredis.LeaseOf(bh, a)
		if !ok || l.Token <= last || l.Bulkhead != "p" || l.ID == "" {
			t.Fatalf("LeaseOf = %v, %v; want a lease of p with a token above %d", l, ok, last)
		}
		last = l.Token
		bh.FinishCall()
		if _, ok := rxredis.LeaseOf(bh, a); ok {
			t.Fatal("LeaseOf still reports a lease given back")
		}
	}
	sem, _ := bulkhead.New("local", bulkhead.DefaultConfig())
	if _, ok := rxredis.LeaseOf(sem, sem.AcquirePermissionAsync()); ok {
		t.Error("LeaseOf of a Semaphore's acquisition reports a lease")
	}
	sem.ReleasePermission()
}

func TestReleasingMoreThanWasGrantedPanicsNamingTheBulkhead(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	b := newBulkhead(t, s, "over", fleetConfig(1, 0))
	defer func() {
		if r := recover(); r == nil || !contains(r.(string), `"over"`) {
			t.Fatalf("recover() = %v, want a panic naming the bulkhead", r)
		}
	}()
	b.ReleasePermission()
}

func contains(s, sub string) bool { return len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0) }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// A Permit's CallFinished carries its call's duration, grant to Finish,
// on the Store's Clock; a bare FinishCall, which does not say which call
// finished, carries none.
func TestPermitFinishReportsTheCallDurationAndBareFinishCallNone(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	cfg := fastStore()
	cfg.Clock = clock
	s, _ := newStore(t, sharedServer(t), cfg)
	b := newBulkhead(t, s, "p", fleetConfig(2, time.Hour))
	var mu sync.Mutex
	var finished []time.Duration
	defer b.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallFinished {
			mu.Lock()
			finished = append(finished, e.CallDuration)
			mu.Unlock()
		}
	})()
	p := b.Acquire()
	if err := await(t, p.Acquisition()); err != nil {
		t.Fatal(err)
	}
	if err := await(t, b.AcquirePermissionAsync()); err != nil {
		t.Fatal(err)
	}
	clock.Advance(250 * time.Millisecond)
	p.Finish()
	b.FinishCall()
	mu.Lock()
	defer mu.Unlock()
	if want := []time.Duration{250 * time.Millisecond, 0}; !slices.Equal(finished, want) {
		t.Errorf("CallFinished durations %v, want %v", finished, want)
	}
}
