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
//
// t, step and d are the worker's progress through the task it holds; they
// belong to the worker goroutine, and to the goroutine that replaces it
// when user code ends it with runtime.Goexit (see work).
type worker struct {
	wake      chan *task
	idleSince time.Duration

	t       *task         // the task held, nil once the worker retires
	step    uint8         // how far run got with t
	started time.Duration // t's start (publishPermitted), for its CallFinished
	d       delivery      // t's events, outcome and callbacks
}

// Steps of a worker through one task. Each is recorded before the user code
// it runs (a listener, the function, callbacks), so that a goroutine taking
// over after that code called runtime.Goexit resumes after it.
const (
	stepTaken      uint8 = iota // nothing done yet
	stepAdmitted                // CallPermitted being published (the task will run)
	stepRunning                 // the function runs
	stepReturned                // the function returned (or panicked)
	stepDelivering              // w.d holds the rest: events, outcome, callbacks
)

// work is the loop of one worker goroutine: it runs t, then the tasks it
// takes from the queue or receives while idle, until it retires.
//
// User code that runs on a worker (the function, a listener, a callback,
// the callback panic handler) may call runtime.Goexit (t.FailNow does),
// which ends the goroutine whatever it defers and which recover cannot see.
// The deferred guard then starts a goroutine that takes over the same
// worker and resumes where this one stopped (w.step, w.d): the task's
// outcome is still published and its callbacks run, the worker keeps its
// place in the counts, and the pool keeps its capacity. A panic that gets
// here (only one of the handler's, which ends the program) does the same,
// to no effect.
func (p *Pool) work(w *worker, t *task) {
	returned := false
	defer func() {
		if !returned {
			go p.work(w, nil)
		}
	}()
	if t != nil {
		w.t, w.step = t, stepTaken
	}
	for w.t != nil {
		p.run(w)
		w.t, w.step = p.next(w, w.t), stepTaken
	}
	returned = true
}

// run executes the task the worker holds (its state is taskRunning), or
// what is left of it after a takeover, and delivers its outcome on this
// goroutine. A panic of the function or of a callback is recovered (a
// *PanicError, the pool's handler), so the worker survives it.
func (p *Pool) run(w *worker) {
	t := w.t
	if w.step < stepAdmitted {
		if t.stop != nil {
			// The task is running: its context no longer withdraws it.
			t.stop()
			t.stop = nil
		}
		if t.ctx.Err() != nil {
			// Handed to a worker, but its submitter gave up before it
			// started: withdrawn, as if it had still been queued.
			t.err = &withdrawnError{pool: p.name, cause: context.Cause(t.ctx)}
			w.d = delivery{events: 1, event: bulkhead.CallCancelled, state: taskWithdrawn, one: t}
			w.step = stepDelivering
		} else {
			// unknownStart first: a listener that calls runtime.Goexit
			// leaves the task without a start, not with the last one's.
			w.step, w.started = stepAdmitted, unknownStart
			w.started = p.publishPermitted(t)
		}
	}
	if w.step < stepRunning {
		w.step = stepRunning
		ctx, cancel := context.WithCancelCause(t.ctx)
		t.cell.Lock()
		t.cancel = cancel
		cause := t.interrupted
		t.cell.Unlock()
		if cause != nil {
			cancel(cause)
		}
		t.job.exec(ctx)
		w.step = stepReturned
	}
	if w.step < stepDelivering {
		if w.step == stepRunning {
			// The function never returned: it called runtime.Goexit and
			// this is the goroutine that took over.
			t.job.exited()
		}
		t.cancel(nil) // only this worker writes t.cancel
		t.ctx = nil   // no one reads it once the task ran; let it be collected
		w.d = delivery{events: 1, event: bulkhead.CallFinished, started: w.started, state: taskCompleted, one: t}
		w.step = stepDelivering
	}
	p.runDelivery(&w.d)
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
