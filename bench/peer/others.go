package peer

import (
	"context"

	fsbulkhead "github.com/failsafe-go/failsafe-go/bulkhead"
	"golang.org/x/sync/semaphore"
)

// Weighted is golang.org/x/sync/semaphore.Weighted, acquired one unit at a time.
type Weighted struct{ w *semaphore.Weighted }

// NewWeighted returns a Weighted peer with n permits.
func NewWeighted(n int) *Weighted { return &Weighted{semaphore.NewWeighted(int64(n))} }

// Name returns "xsync".
func (p *Weighted) Name() string { return "xsync" }

// TryAcquire is Weighted.TryAcquire(1).
func (p *Weighted) TryAcquire() bool { return p.w.TryAcquire(1) }

// Acquire is Weighted.Acquire(ctx, 1).
func (p *Weighted) Acquire(ctx context.Context) error { return p.w.Acquire(ctx, 1) }

// AcquireAsync parks a goroutine when no permit is free.
func (p *Weighted) AcquireAsync(ctx context.Context, f func(error)) { goAcquire(p, ctx, f) }

// Release is Weighted.Release(1).
func (p *Weighted) Release() { p.w.Release(1) }

// Failsafe is failsafe-go's bulkhead (v0.9.8).
type Failsafe struct{ b fsbulkhead.Bulkhead[any] }

// NewFailsafe returns a Failsafe peer with n permits.
func NewFailsafe(n int) *Failsafe { return &Failsafe{fsbulkhead.New[any](uint(n))} }

// Name returns "failsafe".
func (p *Failsafe) Name() string { return "failsafe" }

// TryAcquire is Bulkhead.TryAcquirePermit.
func (p *Failsafe) TryAcquire() bool { return p.b.TryAcquirePermit() }

// Acquire is Bulkhead.AcquirePermit.
func (p *Failsafe) Acquire(ctx context.Context) error { return p.b.AcquirePermit(ctx) }

// AcquireAsync parks a goroutine when no permit is free.
func (p *Failsafe) AcquireAsync(ctx context.Context, f func(error)) { goAcquire(p, ctx, f) }

// Release is Bulkhead.ReleasePermit.
func (p *Failsafe) Release() { p.b.ReleasePermit() }

// Chan is the classic buffered-channel semaphore: a send takes a permit, a
// receive gives it back.
type Chan chan struct{}

// NewChan returns a Chan peer with n permits.
func NewChan(n int) Chan { return make(Chan, n) }

// Name returns "chan".
func (c Chan) Name() string { return "chan" }

// TryAcquire sends without blocking.
func (c Chan) TryAcquire() bool {
	select {
	case c <- struct{}{}:
		return true
	default:
		return false
	}
}

// Acquire sends, or gives up when ctx ends.
func (c Chan) Acquire(ctx context.Context) error {
	select {
	case c <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// AcquireAsync parks a goroutine when no permit is free.
func (c Chan) AcquireAsync(ctx context.Context, f func(error)) { goAcquire(c, ctx, f) }

// Release receives.
func (c Chan) Release() { <-c }
