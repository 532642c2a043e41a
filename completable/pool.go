package completable

import (
	"context"

	"github.com/rxbulkhead/bulkhead/pool"
)

// FromPool returns a Completable that runs fn on p once per subscription
// and signals OnComplete when fn returns nil, OnError with its error
// otherwise. A blocking fn blocks a worker of p, never the subscriber:
// Subscribe returns at once and starts no goroutine of its own.
//
// Subscribe calls OnSubscribe first, then submits fn (pool.Submit). A
// full pool signals OnError(*bulkhead.FullError) (NoWait or QueueFull), a closed pool
// OnError(pool.ErrClosed), a panic in fn OnError(*pool.PanicError).
// Dispose withdraws a queued task (fn never runs) or cancels the context of
// a running one; no signal follows. If the observer disposes inside
// OnSubscribe, nothing is submitted. The terminal signal runs on the pool's
// worker, or on the subscribing goroutine when the pool rejects the task at
// once. FromPool panics if p or fn is nil.
func FromPool(p *pool.Pool, fn func(ctx context.Context) error) Completable {
	if p == nil {
		panic("completable: FromPool called with a nil *pool.Pool")
	}
	if fn == nil {
		panic("completable: FromPool called with a nil func")
	}
	return poolCompletable{p: p, fn: fn}
}

type poolCompletable struct {
	p  *pool.Pool
	fn func(ctx context.Context) error
}

func (c poolCompletable) Subscribe(o Observer) {
	// Dispose cancels ctx: Submit then withdraws the queued task, or the
	// running task sees its context end.
	subscribeCancellable(o, func(ctx context.Context, cancel context.CancelFunc, s *subscription) {
		f := pool.Submit(ctx, c.p, func(ctx context.Context) (struct{}, error) { return struct{}{}, c.fn(ctx) })
		f.OnDone(func(_ struct{}, err error) {
			cancel()
			s.finish(o, err) // the CAS in finish decides against Dispose
		})
	})
}
