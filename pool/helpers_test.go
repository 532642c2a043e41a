package pool_test

import (
	"context"
	"sync"
	"testing"

	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// newTestPool builds a Pool or fails the test. At cleanup it closes the pool,
// waiting for every task (a test that leaves a task blocked fails: inside a
// synctest bubble as a deadlock), and checks that no worker is left and
// nothing is queued.
func newTestPool(t testing.TB, name string, cfg pool.Config, opts ...pool.Option) *pool.Pool {
	t.Helper()
	p, err := pool.New(name, cfg, opts...)
	if err != nil {
		t.Fatalf("NewPool(%q, %+v): %v", name, cfg, err)
	}
	testkit.ClosePool(t, p)
	return p
}

// poolGate blocks the tasks that wait on it until it is opened.
type poolGate struct {
	c    chan struct{}
	once sync.Once
}

// newPoolGate returns a closed gate that opens at cleanup at the latest, so
// that a failing test does not leave tasks blocked (create it after the pool:
// cleanups run last-in first-out).
func newPoolGate(t testing.TB) *poolGate {
	g := &poolGate{c: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *poolGate) open() { g.once.Do(func() { close(g.c) }) }

// task returns a task function that blocks until the gate opens (or its
// context ends: then it returns the context's cause), then returns v.
func poolTaskWaitingOn[T any](g *poolGate, v T) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		select {
		case <-g.c:
			return v, nil
		case <-ctx.Done():
			var zero T
			return zero, context.Cause(ctx)
		}
	}
}
