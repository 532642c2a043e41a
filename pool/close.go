package pool

import (
	"context"

	"github.com/rxbulkhead/bulkhead"
)

// stopIfDoneLocked closes p.stopped once the pool is closed and its last
// worker has left (the queue is then empty: it is non-empty only while
// MaxWorkers run, and the unlink that emptied it stopped the MaxQueueWait
// timer).
func (p *Pool) stopIfDoneLocked() {
	if !p.closed || p.workers != 0 {
		return
	}
	select {
	case <-p.stopped:
	default:
		close(p.stopped)
	}
}

// Close stops the pool. It returns at once if the pool has already stopped.
// From the first Close on, Submit rejects new tasks with ErrClosed and idle
// workers retire. Close then waits, until ctx ends, for the queued and
// running tasks to finish (drain) and for every worker to exit, and returns
// nil.
//
// If ctx ends first, Close cancels: it withdraws the tasks still queued
// (their error matches bulkhead.ErrCancelled and ErrClosed; CallCancelled is
// published; their callbacks run on the caller of Close, after every one of
// them is done), cancels the contexts of the running tasks with cause
// ErrClosed, and returns ctx.Err() without waiting for them: a task that
// ignores its context runs to its end, and its Future is then done. Call
// Close again to wait for that. Close(ctx) with ctx already done cancels at
// once.
//
// A task or a callback running on a worker must not call Close of its own
// pool with a context that never ends: Close would wait for that worker.
// Close panics if ctx is nil ("pool: Close called with a nil context").
func (p *Pool) Close(ctx context.Context) error {
	if ctx == nil {
		panic("pool: Close called with a nil context")
	}
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		for i, w := range p.idle {
			p.idle[i] = nil
			p.workers--
			w.wake <- nil
		}
		p.idle = p.idle[:0]
		if p.keepTimer != nil {
			p.keepTimer.Stop()
			p.keepTimer = nil
			p.keepGen++
		}
		p.stopIfDoneLocked()
	}
	p.mu.Unlock()
	select {
	case <-p.stopped:
		return nil
	default:
	}
	select {
	case <-p.stopped:
		return nil
	case <-ctx.Done():
	}

	p.mu.Lock()
	var withdrawn taskList
	for t := p.queue.head; t != nil; t = p.queue.head {
		p.unqueueLocked(t)
		if t.cell.CompareAndSwap(taskQueued, taskWithdrawn) {
			withdrawn.push(t)
		}
	}
	running := make([]*task, 0, p.running.n)
	for t := p.running.head; t != nil; t = t.next {
		running = append(running, t)
	}
	p.mu.Unlock()
	p.decideAll(&withdrawn, taskWithdrawn, &withdrawnError{pool: p.name, cause: ErrClosed}, bulkhead.CallCancelled, 0)
	for _, t := range running {
		t.interrupt(ErrClosed)
	}
	return ctx.Err()
}
