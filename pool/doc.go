// Package pool is the goroutine-pool bulkhead for blocking code: a Pool is
// a bounded set of worker goroutines with a bounded FIFO queue, like
// resilience4j's ThreadPoolBulkhead. Submit hands a function to a Pool and
// returns its Future at once: the caller never blocks, and a function that
// ignores its context blocks a worker, not the caller.
//
// A Semaphore (package bulkhead) limits how many callers run a call at
// once; a Pool runs the call itself. Use a Pool for code that blocks
// without honouring a context (see docs/guide.md, "semaphore or pool?").
// A Pool publishes the bulkhead.Event values of the root package, rejects
// with a *bulkhead.FullError and withdraws with bulkhead.ErrCancelled, so
// the same listeners, metrics exporters and error checks serve both.
//
// Registry keeps one Pool per name (one per blocking dependency).
package pool
