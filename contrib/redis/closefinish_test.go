package redis_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// Finish takes its permit out of the bulkhead, publishes CallFinished and
// only then queues the release for the next round trip. A Close that runs
// in between (a slow CallFinished listener makes the window wide) must
// still give that lease back: the Finish's own release is dropped once the
// Store is closed, so if Close skipped it the lease stayed in Redis until
// LeaseTTL.
func TestAFinishWhoseListenerRunsAcrossCloseHasItsLeaseGivenBackByClose(t *testing.T) {
	srv := sharedServer(t)
	cfg := fastStore()
	cfg.LeaseTTL = time.Minute // an expiry cannot pass for a give-back
	s, c := newStore(t, srv, cfg)
	b, err := rxredis.NewBulkhead(s, "p", fleetConfig(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	p := b.Acquire()
	if err := await(t, p.Acquisition()); err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	b.OnEvent(func(e bulkhead.Event) {
		if e.Type != bulkhead.CallFinished {
			return
		}
		close(entered)
		select {
		case <-release:
		case <-time.After(holdTimeout):
		}
	})
	finished := make(chan error, 1)
	go func() { p.Finish(); finished <- nil }()
	select {
	case <-entered:
	case <-time.After(holdTimeout):
		close(release)
		t.Fatalf("CallFinished not published within %v", holdTimeout)
	}
	closed := startClose(s)
	err = within(t, closed, "Close")
	close(release)
	within(t, finished, "Finish")
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), holdTimeout)
	defer cancel()
	if n, err := c.ZCard(ctx, prefixFor(t)+"{p}:leases").Result(); err != nil || n != 0 {
		t.Errorf("leases left in Redis after Close and Finish returned: %d (%v), want 0", n, err)
	}
}

// Close while calls acquire and finish on other goroutines: every call
// gets an outcome (a grant, or an error matching ErrClosed once the Store
// closes), a Finish after Close does nothing, and no lease or ticket of
// the process is left in Redis once Close has returned and the calls have
// ended (LeaseTTL and TicketTTL are long: only give-backs can empty it).
func TestCloseWhileCallsAcquireAndFinishLeavesNoLeaseOrTicketInRedis(t *testing.T) {
	srv := sharedServer(t)
	cfg := fastStore()
	cfg.LeaseTTL, cfg.TicketTTL = time.Minute, time.Minute
	s, c := newStore(t, srv, cfg)
	b, err := rxredis.NewBulkhead(s, "p", fleetConfig(2, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	const workers = 6
	var grants atomic.Int64
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for {
				p := b.Acquire()
				select {
				case <-p.Acquisition().Done():
				case <-time.After(outcomeTimeout):
					errs <- errors.New("no outcome within outcomeTimeout")
					return
				}
				if err := p.Acquisition().Err(); err != nil {
					if !errors.Is(err, rxredis.ErrClosed) {
						err = fmt.Errorf("outcome %w, want a grant or ErrClosed", err)
					} else {
						err = nil
					}
					errs <- err
					return
				}
				grants.Add(1)
				p.Finish()
			}
		}()
	}
	eventually(t, outcomeTimeout, "50 grants among the callers", func() bool { return grants.Load() >= 50 })
	if err := within(t, startClose(s), "Close"); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for range workers {
		if err := within(t, errs, "a caller"); err != nil {
			t.Error(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), holdTimeout)
	defer cancel()
	for _, k := range []string{"leases", "queue"} {
		if n, err := c.ZCard(ctx, prefixFor(t)+"{p}:"+k).Result(); err != nil || n != 0 {
			t.Errorf("%s left in Redis after Close: %d (%v), want 0", k, n, err)
		}
	}
}

// With FailOver and Redis down, a call waits on the local semaphore. Close
// promises that every call still waiting is rejected with ErrClosed before
// it returns: that one too, not left to be granted (after Close) or timed
// out by the local semaphore later.
func TestCloseRejectsACallWaitingOnTheFailOverSemaphore(t *testing.T) {
	srv := withServer(t)
	s, _ := newStore(t, srv, fastStore())
	cfg := fleetConfig(2, time.Minute)
	cfg.Unreachable, cfg.LocalFraction = rxredis.FailOver, 0.5 // 1 local permit
	b, err := rxredis.NewBulkhead(s, "p", cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	// The round trip of this call fails and moves it to the local semaphore.
	local := b.Acquire()
	if err := await(t, local.Acquisition()); err != nil {
		t.Fatalf("FailOver acquisition: %v, want a local grant", err)
	}
	waiting := b.Acquire()
	if err := waiting.Acquisition().Err(); err != bulkhead.ErrPending {
		t.Fatalf("second call with the 1 local permit taken: %v, want it to wait", err)
	}
	if err := within(t, startClose(s), "Close"); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := waiting.Acquisition().Err(); !errors.Is(err, rxredis.ErrClosed) {
		t.Errorf("call waiting on the local semaphore when Close returned: %v, want ErrClosed", err)
	}
	local.Finish() // after Close: does nothing
	if err := waiting.Acquisition().Err(); !errors.Is(err, rxredis.ErrClosed) {
		t.Errorf("that call once the local permit came back: %v, want ErrClosed", err)
	}
}
