package peer

import (
	"context"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// Semaphore is rxbulkhead's *bulkhead.Semaphore with an unbounded FIFO queue
// and a one-hour wait.
type Semaphore struct {
	S *bulkhead.Semaphore
}

// NewSemaphore returns a Semaphore peer with n permits.
func NewSemaphore(n int) *Semaphore {
	s, err := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: n, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	if err != nil {
		panic(err)
	}
	return &Semaphore{S: s}
}

// Name returns "rxbulkhead".
func (p *Semaphore) Name() string { return "rxbulkhead" }

// TryAcquire is bulkhead.Semaphore.TryAcquirePermission.
func (p *Semaphore) TryAcquire() bool { return p.S.TryAcquirePermission() }

// Acquire is bulkhead.Semaphore.AcquirePermission.
func (p *Semaphore) Acquire(ctx context.Context) error { return p.S.AcquirePermission(ctx) }

// AcquireAsync queues a record with AcquirePermissionAsync and runs f from
// OnDone: no goroutine waits. ctx is not watched (cancel with
// Acquisition.Cancel in real code).
func (p *Semaphore) AcquireAsync(_ context.Context, f func(error)) {
	p.S.AcquirePermissionAsync().OnDone(f)
}

// Release is bulkhead.Semaphore.FinishCall.
func (p *Semaphore) Release() { p.S.FinishCall() }
