package testkit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead/pool"
)

// ClosePool registers a t.Cleanup that closes p, draining it, and fails the
// test if Close fails or p still has a worker or a queued task afterwards:
// the leak check of a Pool. The failure names the pool and shows its
// metrics. The drain is bounded: a task still running or queued
// DefaultTimeout after the cleanup began (a task that never ends by
// itself, such as one waiting for a context nobody cancels) is a leak, and
// the check fails naming the pool with the count of active workers and
// queued tasks at that moment; it then cancels them (Close with an ended
// context: the running tasks' contexts are cancelled, the queued ones
// withdrawn) and waits up to DefaultTimeout more for the cancelled tasks
// to return, saying so if one does not (a task that ignores its context).
// Inside a testing/synctest bubble the cleanup runs inside the bubble, so
// the drain and its bound run on the bubble's fake time. ClosePool panics
// if p is nil.
func ClosePool(t testing.TB, p *pool.Pool) {
	t.Helper()
	if p == nil {
		panic("testkit: ClosePool called with a nil *pool.Pool")
	}
	t.Cleanup(func() {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// The snapshot is taken before the cancel, which Close observes:
		// what was left when the bound ran out, before Close withdrew it.
		var left pool.Metrics
		timer := time.AfterFunc(closePoolBudget, func() {
			left = p.Metrics()
			cancel()
		})
		err := p.Close(ctx)
		if timer.Stop() || err == nil {
			if err != nil {
				t.Errorf("pool %q: Close: %v", p.Name(), err)
			}
			if m := p.Metrics(); m.ActiveWorkers != 0 || m.PoolSize != 0 || m.QueueDepth != 0 {
				t.Errorf("pool %q leaked after Close: %d active workers, %d workers, %d queued tasks (%+v)",
					p.Name(), m.ActiveWorkers, m.PoolSize, m.QueueDepth, m)
			}
			return
		}
		// The bound ran out: Close cancelled the tasks without waiting.
		wait, stop := context.WithTimeout(context.Background(), closePoolBudget)
		defer stop()
		still := ""
		if p.Close(wait) != nil {
			still = fmt.Sprintf("; %d still running %v after their cancellation (a task that ignores its context)",
				p.Metrics().ActiveWorkers, closePoolBudget)
		}
		t.Errorf("pool %q leaked: %d active worker(s) and %d queued task(s) still there %v after the drain began, cancelled%s (%+v)",
			p.Name(), left.ActiveWorkers, left.QueueDepth, closePoolBudget, still, left)
	})
}

// closePoolBudget is how long ClosePool waits for a drain, and then for the
// cancelled tasks.
const closePoolBudget = DefaultTimeout
