package redis_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// outcomes counts the outcomes delivered to a set of acquisitions, to check
// that each gets exactly one.
type outcomes struct {
	mu    sync.Mutex
	count map[*bulkhead.Acquisition]int
	errs  map[*bulkhead.Acquisition]error
}

func newOutcomes() *outcomes {
	return &outcomes{count: map[*bulkhead.Acquisition]int{}, errs: map[*bulkhead.Acquisition]error{}}
}

func (o *outcomes) watch(a *bulkhead.Acquisition) *bulkhead.Acquisition {
	a.OnDone(func(err error) {
		o.mu.Lock()
		o.count[a]++
		o.errs[a] = err
		o.mu.Unlock()
	})
	return a
}

// check waits for every watched acquisition's outcome and fails if one got
// none or more than one.
func (o *outcomes) check(t *testing.T, as []*bulkhead.Acquisition) {
	t.Helper()
	for _, a := range as {
		await(t, a)
	}
	// Done is closed just before the callbacks run: wait for them.
	eventually(t, outcomeTimeout, "every callback ran", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, a := range as {
			if o.count[a] == 0 {
				return false
			}
		}
		return true
	})
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, a := range as {
		if o.count[a] != 1 {
			t.Errorf("acquisition %d got %d outcomes, want exactly 1", i, o.count[a])
		}
	}
}

func TestFailClosedWhileRedisIsPausedRejectsWithErrUnavailableThenRecovers(t *testing.T) {
	srv := withServer(t)
	s, c := newStore(t, srv, fastStore())
	b := newBulkhead(t, s, "p", fleetConfig(1, 5*time.Second))
	o := newOutcomes()
	held := b.Acquire()
	if err := await(t, held.Acquisition()); err != nil {
		t.Fatal(err)
	}
	waiter := o.watch(b.AcquirePermissionAsync())
	eventually(t, outcomeTimeout, "waiter queued", func() bool { m, _ := b.FleetMetrics(context.Background()); return m.QueuedCalls == 1 })

	srv.Pause()
	paused := true
	defer func() {
		if paused {
			srv.Resume()
		}
	}()
	// The poll round trip of the waiter times out: the store is down.
	if err := await(t, waiter); !errors.Is(err, rxredis.ErrUnavailable) || errors.Is(err, bulkhead.ErrBulkheadFull) {
		t.Fatalf("waiter while paused: %v, want ErrUnavailable and not ErrBulkheadFull", err)
	}
	if s.Available() {
		t.Error("Available() is true while Redis is paused")
	}
	var during []*bulkhead.Acquisition
	for range 20 {
		during = append(during, o.watch(b.AcquirePermissionAsync()))
	}
	held.Finish() // given back once Redis answers again
	o.check(t, append(during, waiter))
	for _, a := range during {
		if !errors.Is(a.Err(), rxredis.ErrUnavailable) {
			t.Fatalf("acquisition while paused: %v, want ErrUnavailable", a.Err())
		}
	}

	srv.Resume()
	paused = false
	eventually(t, outcomeTimeout, "store available again", s.Available)
	after := b.Acquire()
	if err := await(t, after.Acquisition()); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	if _, ok := after.Lease(); !ok {
		t.Error("a grant after recovery has no lease")
	}
	after.Finish()
	fleetIdle(t, c, prefixFor(t), "p", outcomeTimeout)
}

func TestFailOverAdmitsTheLocalFractionWhileRedisIsDownThenReturnsToTheFleet(t *testing.T) {
	srv := withServer(t)
	s, c := newStore(t, srv, fastStore())
	cfg := fleetConfig(4, 5*time.Second)
	cfg.Unreachable, cfg.LocalFraction = rxredis.FailOver, 0.5
	b := newBulkhead(t, s, "p", cfg)
	before := b.Acquire()
	if err := await(t, before.Acquisition()); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	// The first round trip after the kill fails and moves the calls it
	// carried to the local semaphore of 2 permits (half of 4).
	o := newOutcomes()
	var local []*rxredis.Permit
	for range 3 {
		p := b.Acquire()
		o.watch(p.Acquisition())
		local = append(local, p)
	}
	o.check(t, []*bulkhead.Acquisition{local[0].Acquisition(), local[1].Acquisition()})
	for _, p := range local[:2] {
		if err := p.Acquisition().Err(); err != nil {
			t.Fatalf("FailOver acquisition: %v, want a local grant", err)
		}
		if _, ok := p.Lease(); ok {
			t.Error("a FailOver permit reports a Redis lease")
		}
	}
	if err := local[2].Acquisition().Err(); err != bulkhead.ErrPending {
		t.Fatalf("third call with 2 local permits taken: %v, want it to wait", err)
	}
	local[0].Finish()
	o.check(t, []*bulkhead.Acquisition{local[2].Acquisition()})
	if err := local[2].Acquisition().Err(); err != nil {
		t.Fatalf("third call after a local release: %v", err)
	}

	if err := srv.Run(); err != nil {
		t.Fatal(err)
	}
	eventually(t, outcomeTimeout, "store available again", s.Available)
	fleet := b.Acquire()
	if err := await(t, fleet.Acquisition()); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	if l, ok := fleet.Lease(); !ok || l.Token <= 0 {
		t.Errorf("after recovery the grant has no Redis lease: %v %v", l, ok)
	}
	local[1].Finish()
	local[2].Finish()
	fleet.Finish()
	before.Finish()
	fleetIdle(t, c, prefixFor(t), "p", outcomeTimeout)
}

func TestRestartWithoutPersistenceRestoresHeldLeasesAndKeepsTokensIncreasing(t *testing.T) {
	srv := withServer(t)
	s, c := newStore(t, srv, fastStore())
	b := newBulkhead(t, s, "p", fleetConfig(2, 10*time.Second))
	var held []*rxredis.Permit
	var last int64
	for range 2 {
		p := b.Acquire()
		if err := await(t, p.Acquisition()); err != nil {
			t.Fatal(err)
		}
		l, _ := p.Lease()
		last = max(last, l.Token)
		held = append(held, p)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// The renewal loop adds the running calls' leases back, so a call that
	// asks after that queues behind them instead of taking a "free" permit.
	eventually(t, outcomeTimeout, "leases restored", func() bool {
		m, err := b.FleetMetrics(context.Background())
		return err == nil && m.InFlightCalls == 2 && m.LeasesRestored == 2
	})
	eventually(t, outcomeTimeout, "store available", s.Available)
	o := newOutcomes()
	waiter := b.Acquire()
	o.watch(waiter.Acquisition())
	eventually(t, outcomeTimeout, "waiter queued", func() bool { m, _ := b.FleetMetrics(context.Background()); return m.QueuedCalls == 1 })
	if err := waiter.Acquisition().Err(); err != bulkhead.ErrPending {
		t.Fatalf("a call was decided while both restored permits were held: %v", err)
	}
	held[0].Finish()
	o.check(t, []*bulkhead.Acquisition{waiter.Acquisition()})
	if err := waiter.Acquisition().Err(); err != nil {
		t.Fatalf("waiter after the restart: %v", err)
	}
	if l, _ := waiter.Lease(); l.Token <= last {
		t.Errorf("token after the restart %d not above %d from before", l.Token, last)
	}
	m, _ := b.FleetMetrics(context.Background())
	if m.LeasesLost != 0 {
		t.Errorf("%d leases lost", m.LeasesLost)
	}
	held[1].Finish()
	waiter.Finish()
	fleetIdle(t, c, prefixFor(t), "p", outcomeTimeout)
}

func TestUnreachableRedisFailsClosedWithAnErrorThatSaysSo(t *testing.T) {
	requireServer(t)
	srv := withServer(t)
	srv.Kill() // nothing listens on its port now
	s, _ := newStore(t, srv, fastStore())
	b := newBulkhead(t, s, "p", fleetConfig(2, time.Second))
	var calls atomic.Int32
	a := b.AcquirePermissionAsync()
	a.OnDone(func(error) { calls.Add(1) })
	err := await(t, a)
	var se *rxredis.StoreError
	if !errors.As(err, &se) || !se.Unreachable || !errors.Is(err, rxredis.ErrUnavailable) || !contains(err.Error(), "unreachable") {
		t.Fatalf("err = %v, want a *StoreError saying redis is unreachable", err)
	}
	if err := b.Check(context.Background()); !errors.Is(err, rxredis.ErrUnavailable) {
		t.Errorf("Check = %v, want ErrUnavailable", err)
	}
	eventually(t, outcomeTimeout, "the callback ran", func() bool { return calls.Load() >= 1 })
	if calls.Load() != 1 {
		t.Errorf("%d outcomes delivered, want 1", calls.Load())
	}
}

// Regression: the probe was armed by a timer that every kick reset, so a
// steady stream of releases while Redis was away postponed recovery until
// the stream stopped.
func TestRecoveryIsNotPostponedByASteadyStreamOfReleases(t *testing.T) {
	srv := withServer(t)
	s, c := newStore(t, srv, fastStore()) // ProbeInterval 50ms
	b := newBulkhead(t, s, "p", fleetConfig(100, time.Second))
	var held []*rxredis.Permit
	for range 100 {
		held = append(held, b.Acquire())
	}
	for _, p := range held {
		if err := await(t, p.Acquisition()); err != nil {
			t.Fatal(err)
		}
	}
	srv.Kill()
	held[0].Finish() // the round trip that fails: the store is down
	eventually(t, outcomeTimeout, "store down", func() bool { return !s.Available() })
	if err := srv.Run(); err != nil {
		t.Fatal(err)
	}
	// One release every 5ms for about 500ms: ten times the probe interval.
	recovered := time.Duration(-1)
	start := time.Now()
	for _, p := range held[1:] {
		p.Finish()
		if recovered < 0 && s.Available() {
			recovered = time.Since(start)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if recovered < 0 || recovered > 300*time.Millisecond {
		t.Errorf("recovered after %v while releases kept coming, want within a few probe intervals (50ms)", recovered)
	}
	fleetIdle(t, c, prefixFor(t), "p", outcomeTimeout)
}
