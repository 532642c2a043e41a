package peer

import "context"

// Peer is a bulkhead reduced to what the benchmarks measure. A permit taken
// by TryAcquire, Acquire or AcquireAsync is given back with Release, once.
type Peer interface {
	// Name identifies the peer in benchmark names ("rxbulkhead", "xsync", ...).
	Name() string
	// TryAcquire takes a permit if one is free now and reports whether it
	// did. It never waits.
	TryAcquire() bool
	// Acquire blocks the calling goroutine until it holds a permit (nil) or
	// ctx ends (ctx.Err()).
	Acquire(ctx context.Context) error
	// AcquireAsync returns without waiting and calls f with nil once a permit
	// is held, or with the error that ended the wait. A peer that can only
	// block parks one goroutine per waiting caller to offer this.
	AcquireAsync(ctx context.Context, f func(err error))
	// Release gives back a permit.
	Release()
}

// Factory builds a fresh Peer with the given number of permits and no bound
// on the number of waiting callers.
type Factory struct {
	Name string
	New  func(permits int) Peer
	// AsyncRelease is set for the pools: Release frees a worker that goes
	// back to idle on its own goroutine, so a TryAcquire right after a
	// Release may still fail.
	AsyncRelease bool
}

// All returns the factories of every peer, rxbulkhead first.
func All() []Factory {
	return []Factory{
		{"rxbulkhead", func(n int) Peer { return NewSemaphore(n) }, false},
		{"rxbulkhead-pool", func(n int) Peer { return NewCorePool(n) }, true},
		{"xsync", func(n int) Peer { return NewWeighted(n) }, false},
		{"failsafe", func(n int) Peer { return NewFailsafe(n) }, false},
		{"chan", func(n int) Peer { return NewChan(n) }, false},
		{"pool", func(n int) Peer { return NewPool(n) }, true},
	}
}

// goAcquire adapts a blocking Acquire to AcquireAsync: the fast path runs f
// at once; otherwise one goroutine waits on behalf of the caller (this is
// what bulkhead.FromBlocking does, and the cost that the waiter benchmarks
// count).
func goAcquire(p Peer, ctx context.Context, f func(error)) {
	if p.TryAcquire() {
		f(nil)
		return
	}
	go func() { f(p.Acquire(ctx)) }()
}
