package testkit

import (
	"context"
	"testing"

	"github.com/rxbulkhead/bulkhead/pool"
)

// ClosePool registers a t.Cleanup that closes p, draining it (Close with a
// context that never ends), and fails the test if Close fails or p still has
// a worker or a queued task afterwards: the leak check of a Pool. The
// failure names the pool and shows its metrics. Inside a testing/synctest
// bubble the cleanup runs inside the bubble, so the drain waits on the
// bubble's fake time. ClosePool panics if p is nil.
func ClosePool(t testing.TB, p *pool.Pool) {
	t.Helper()
	if p == nil {
		panic("testkit: ClosePool called with a nil *pool.Pool")
	}
	t.Cleanup(func() {
		t.Helper()
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("pool %q: Close: %v", p.Name(), err)
		}
		if m := p.Metrics(); m.ActiveWorkers != 0 || m.PoolSize != 0 || m.QueueDepth != 0 {
			t.Errorf("pool %q leaked after Close: %d active workers, %d workers, %d queued tasks (%+v)",
				p.Name(), m.ActiveWorkers, m.PoolSize, m.QueueDepth, m)
		}
	})
}
