package pool

import (
	"context"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/clock"
)

// worker is one worker goroutine. It owns the goroutine that runs
// Pool.work; while it is idle its wake channel (capacity 1) is empty, and
// the goroutine that pops it from Pool.idle sends it one task, or nil to
// retire.
type worker struct {
	wake      chan *task
	idleSince time.Duration
}

// work is the loop of one worker goroutine: it runs t, then the tasks it
// takes from the queue or receives while idle, until it retires.
func (p *Pool) work(w *worker, t *task) {
	for t != nil {
		p.run(t)
		t = p.next(w, t)
	}
}

// run executes a task this worker owns (its state is taskRunning) and
// delivers its outcome on this goroutine. A panic of a callback goes to the
// pool's handler (fire), so the worker survives it.
func (p *Pool) run(t *task) {
	if t.stop != nil {
		// The task is running: its context no longer withdraws it.
		t.stop()
		t.stop = nil
	}
	if err := t.ctx.Err(); err != nil {
		// Handed to a worker, but its submitter gave up before it started:
		// withdrawn, as if it had still been queued.
		t.err = &withdrawnError{pool: p.name, cause: context.Cause(t.ctx)}
		p.publish(bulkhead.CallCancelled, 0)
		t.fire(taskWithdrawn)
		return
	}
	p.publish(bulkhead.CallPermitted, 0)
	ctx, cancel := context.WithCancelCause(t.ctx)
	t.cell.Lock()
	t.cancel = cancel
	cause := t.interrupted
	t.cell.Unlock()
	if cause != nil {
		cancel(cause)
	}
	t.job.exec(ctx)
	cancel(nil)
	t.ctx = nil // no one reads it once the task runs; let it be collected
	p.publish(bulkhead.CallFinished, 0)
	t.fire(taskCompleted)
}

// next does the bookkeeping after done was delivered and returns the
// worker's next task, or nil when the worker retires. An idle worker parks
// on its wake channel here.
func (p *Pool) next(w *worker, done *task) *task {
	p.mu.Lock()
	p.running.remove(done)
	if t := p.dequeueLocked(); t != nil {
		p.running.push(t)
		p.mu.Unlock()
		return t
	}
	p.active--
	if p.closed || (p.cfg.KeepAlive == 0 && p.workers > p.cfg.CoreWorkers) {
		p.workers--
		p.stopIfDoneLocked()
		p.mu.Unlock()
		return nil
	}
	w.idleSince = p.now()
	p.idle = append(p.idle, w)
	if p.workers > p.cfg.CoreWorkers && p.keepTimer == nil && p.cfg.KeepAlive != bulkhead.NoTimeout {
		p.armKeepTimerLocked(w.idleSince, clock.Add(p.idle[0].idleSince, p.cfg.KeepAlive))
	}
	p.mu.Unlock()
	return <-w.wake // a task, or nil: retired by the keep-alive timer or Close
}

// armKeepTimerLocked arms the keep-alive timer for deadline. Deadlines only
// grow (idle workers are ordered by idleSince and leave from either end), so
// an armed timer is never later than the one needed, and a timer that fires
// early re-arms.
func (p *Pool) armKeepTimerLocked(now, deadline time.Duration) {
	p.keepGen++
	gen := p.keepGen
	p.keepTimer = p.clock.AfterFunc(max(deadline-now, 0), func() { p.onKeepTimer(gen) })
}

// onKeepTimer runs on the Clock's timer goroutine: it retires the longest
// idle workers whose KeepAlive has passed while more than CoreWorkers live.
func (p *Pool) onKeepTimer(gen uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if gen != p.keepGen {
		return // stopped by Close, or superseded
	}
	p.keepTimer = nil
	now := p.now()
	for len(p.idle) > 0 && p.workers > p.cfg.CoreWorkers && clock.Add(p.idle[0].idleSince, p.cfg.KeepAlive) <= now {
		w := p.idle[0]
		n := copy(p.idle, p.idle[1:])
		p.idle[n] = nil
		p.idle = p.idle[:n]
		p.workers--
		w.wake <- nil // never blocks: an idle worker's channel is empty
	}
	if len(p.idle) > 0 && p.workers > p.cfg.CoreWorkers {
		p.armKeepTimerLocked(now, clock.Add(p.idle[0].idleSince, p.cfg.KeepAlive))
	}
}
