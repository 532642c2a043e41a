package single

import (
	"context"

	"github.com/reactivex/rxgo/v2"

	"github.com/rxbulkhead/bulkhead/internal/rxpermit"
	"github.com/rxbulkhead/bulkhead/pool"
)

// FromPool returns a Single that runs fn on p and emits its value, or one
// error item holding its error. Each observation submits fn afresh
// (pool.Submit), so the Single can be observed many times; a blocking fn
// then blocks a worker of p, never the observer.
//
// The task's context is the observation's (rxgo.WithContext in opts or in
// Observe): when it ends, a queued task is withdrawn without running and a
// running task's context is cancelled. A full pool emits one error item
// holding the *bulkhead.FullError: NoWait or QueueFull at once, WaitTimeout
// for a task still queued after the pool's MaxQueueWait. A closed pool
// emits one holding pool.ErrClosed. A panic in fn is emitted as a
// *pool.PanicError.
//
// FromPool panics if p or fn is nil.
func FromPool[T any](p *pool.Pool, fn func(ctx context.Context) (T, error), opts ...rxgo.Option) rxgo.Single {
	if p == nil {
		panic("single: FromPool called with a nil *pool.Pool")
	}
	if fn == nil {
		panic("single: FromPool called with a nil func")
	}
	produce := func(ctx context.Context, next chan<- rxgo.Item) {
		// ctx ending withdraws or cancels the task through Submit; the
		// Future is then done soon, but the observer need not wait for it.
		f := pool.Submit(ctx, p, fn)
		select {
		case <-f.Done():
		case <-ctx.Done():
			return
		}
		if err := f.Err(); err != nil {
			rxgo.Error(err).SendContext(ctx, next)
			return
		}
		rxgo.Of(f.Value()).SendContext(ctx, next)
	}
	return rxpermit.SingleOf(rxgo.Defer([]rxgo.Producer{produce}, opts...))
}
