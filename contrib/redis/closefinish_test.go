package redis_test

import (
	"context"
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
