package peer

import (
	"context"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
)

// CorePool is rxbulkhead's own goroutine-pool bulkhead, *pool.Pool
// (MaxWorkers = CoreWorkers = n, started lazily; a queue of 1<<20 tasks). As
// for Pool, a permit is a worker: the submitted task runs the caller's
// continuation, then stays on its worker until Release.
type CorePool struct {
	p       *pool.Pool
	release chan struct{} // one token per Release; capacity n
	closed  chan struct{} // closed by Close: holding tasks return
}

// NewCorePool returns a CorePool peer with n workers.
func NewCorePool(n int) *CorePool {
	p, err := pool.New("bench", pool.Config{MaxWorkers: n, CoreWorkers: n, QueueCapacity: 1 << 20, MaxQueueWait: bulkhead.NoTimeout})
	if err != nil {
		panic(err)
	}
	return &CorePool{p: p, release: make(chan struct{}, n), closed: make(chan struct{})}
}

// Name returns "rxbulkhead-pool".
func (c *CorePool) Name() string { return "rxbulkhead-pool" }

// hold is the task that occupies a worker: it runs f (the caller's
// continuation) and then waits for a release token. It ignores its context,
// which a Future.Cancel of a running task would cancel.
func (c *CorePool) hold(f func(error)) func(context.Context) (struct{}, error) {
	return func(context.Context) (struct{}, error) {
		if f != nil {
			f(nil)
		}
		select {
		case <-c.release:
		case <-c.closed:
		}
		return struct{}{}, nil
	}
}

// TryAcquire submits a holding task and withdraws it again if it was
// queued: Cancel wins only against a task no worker has taken. A task that
// Cancel did not withdraw and that was not rejected took a worker, so the
// permit is granted even if the task has already finished: release tokens
// are not tied to a task, and a holding task that found one left by an
// earlier Release (whose own holder had not taken it yet) returns at once,
// leaving that other holder to wait for the token of this permit's Release.
func (c *CorePool) TryAcquire() bool {
	f := pool.Submit(context.Background(), c.p, c.hold(nil))
	if f.Cancel() {
		return false // it was queued: no worker was free
	}
	return f.Err() == bulkhead.ErrPending || f.Ran()
}

// Acquire submits a holding task and waits until a worker runs it or ctx
// ends; a task granted concurrently with ctx ending is given back.
func (c *CorePool) Acquire(ctx context.Context) error {
	ready := make(chan struct{})
	f := pool.Submit(context.Background(), c.p, c.hold(func(error) { close(ready) }))
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		if !f.Cancel() {
			<-ready // a worker took it: give the permit back
			c.Release()
		}
		return ctx.Err()
	}
}

// AcquireAsync submits a task that runs f on a worker; a rejection (a full
// queue) calls f with the error on the calling goroutine.
func (c *CorePool) AcquireAsync(_ context.Context, f func(error)) {
	fut := pool.Submit(context.Background(), c.p, c.hold(f))
	if err := fut.Err(); err != nil && err != bulkhead.ErrPending {
		f(err)
	}
}

// Release frees the worker that holds the permit.
func (c *CorePool) Release() { c.release <- struct{}{} }

// Close ends the holding tasks and the pool's workers.
func (c *CorePool) Close() {
	close(c.closed)
	if err := c.p.Close(context.Background()); err != nil {
		panic(err)
	}
}
