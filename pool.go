package bulkhead

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrPoolClosed is the error of a task submitted to a closed Pool. A task
// still queued when Close gives up waiting is withdrawn with an error that
// matches both ErrCancelled and ErrPoolClosed, and a running task's context
// is cancelled with ErrPoolClosed as its cause.
var ErrPoolClosed = errors.New("bulkhead: pool closed")

// Pool is a bulkhead for blocking code: a bounded set of worker goroutines
// with a bounded FIFO queue, like resilience4j's ThreadPoolBulkhead. Where a
// Semaphore limits how many callers run a call at once, a Pool runs the call
// itself, on one of its workers, so the caller never blocks; use it for code
// that blocks without honouring a context (see docs/guide.md, "semaphore or
// pool?").
//
// Tasks are submitted with Submit. A task goes to an idle worker if there is
// one, else to a new worker while fewer than MaxWorkers run, else to the
// queue if it has room; otherwise it is rejected at once with a *FullError
// (QueueFull). Workers are started lazily; those above CoreWorkers retire
// after KeepAlive idle.
//
// Invariants, all guarded by mu:
//   - a worker is idle (in p.idle, parked on its wake channel, which is then
//     empty) or active (running or delivering one task); workers = idle + active.
//   - the queue is non-empty only while no worker is idle and MaxWorkers
//     run, so a newcomer never overtakes a queued task.
//   - a task leaves the queue through exactly one CAS on its state, from
//     taskQueued to running (a worker took it), withdrawn (its context ended,
//     Future.Cancel, or Close gave up) or rejected (MaxQueueWait expired);
//     only the winner delivers its outcome. Withdrawals CAS outside mu and
//     then unlink; the worker and the timer CAS under mu and unlink at once.
//   - a running task is in p.running until its worker has delivered it, so
//     Close can cancel its context.
//
// Callbacks (Future.OnDone) and event listeners never run while mu is held.
type Pool struct {
	name  string
	cfg   PoolConfig
	clock Clock
	epoch time.Time // idle and queue deadlines are offsets from epoch

	events publisher

	errQueueFull   *FullError
	errWaitTimeout *FullError

	mu      sync.Mutex
	workers int           // live workers: PoolSize
	active  int           // workers holding a task: ActiveWorkers
	idle    []*poolWorker // idle workers, longest idle first
	queue   poolTaskList  // tasks waiting for a worker, oldest first
	running poolTaskList  // tasks taken by a worker and not yet delivered

	keepTimer Timer  // retires idle workers above CoreWorkers
	keepGen   uint64 // identifies keepTimer; a stale or stopped timer does nothing
	waitTimer Timer  // expires queued tasks (MaxQueueWait)

	closed  bool
	stopped chan struct{} // closed once closed and every worker has exited
}

// poolWorker is one worker goroutine. It owns the goroutine that runs
// Pool.work; while it is idle its wake channel (capacity 1) is empty, and the
// goroutine that pops it from Pool.idle sends it one task, or nil to retire.
type poolWorker struct {
	wake      chan *poolTask
	idleSince time.Duration
}

// NewPool returns a Pool named name (used in errors, events and metrics).
// No worker starts until the first task is submitted. It fails with a
// *ConfigError if cfg is not valid, and with an error if name is empty or an
// option is invalid. WithClock sets the clock that measures KeepAlive and
// MaxQueueWait and stamps events.
func NewPool(name string, cfg PoolConfig, opts ...Option) (*Pool, error) {
	if name == "" {
		return nil, errors.New("bulkhead: NewPool: name must not be empty")
	}
	if err := cfg.validateFor(name); err != nil {
		return nil, err
	}
	o, err := newOptions(name, opts)
	if err != nil {
		return nil, err
	}
	return &Pool{
		name:           name,
		cfg:            cfg,
		clock:          o.clock,
		epoch:          o.clock.Now(),
		errQueueFull:   &FullError{Name: name, Reason: QueueFull},
		errWaitTimeout: &FullError{Name: name, Reason: WaitTimeout},
		stopped:        make(chan struct{}),
	}, nil
}

// Name returns the pool's name.
func (p *Pool) Name() string { return p.name }

// Config returns the pool's configuration.
func (p *Pool) Config() PoolConfig { return p.cfg }

// PoolMetrics is a snapshot of a Pool's state, named after resilience4j's
// ThreadPoolBulkhead metrics.
type PoolMetrics struct {
	// ActiveWorkers is the number of workers holding a task: running it or
	// delivering its outcome (a Future is done slightly before its worker
	// counts as idle again).
	ActiveWorkers int
	// PoolSize is the number of live workers, idle or active.
	PoolSize int
	// CoreWorkers and MaxWorkers are the configured bounds.
	CoreWorkers, MaxWorkers int
	// QueueDepth is the number of tasks waiting for a worker.
	QueueDepth int
	// QueueCapacity is the configured queue bound.
	QueueCapacity int
	// RemainingQueueCapacity is QueueCapacity - QueueDepth.
	RemainingQueueCapacity int
}

// Metrics returns a consistent snapshot of the workers and the queue.
func (p *Pool) Metrics() PoolMetrics {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolMetrics{
		ActiveWorkers:          p.active,
		PoolSize:               p.workers,
		CoreWorkers:            p.cfg.CoreWorkers,
		MaxWorkers:             p.cfg.MaxWorkers,
		QueueDepth:             p.queue.n,
		QueueCapacity:          p.cfg.QueueCapacity,
		RemainingQueueCapacity: p.cfg.QueueCapacity - p.queue.n,
	}
}

// OnEvent registers f to receive every event of this pool and returns a func
// that unregisters it (idempotent). A Pool publishes:
//   - CallPermitted when a worker starts a task, on that worker;
//   - CallFinished when the task has returned, on that worker, before its
//     Future is done;
//   - CallRejected when a task is rejected: QueueFull on the submitting
//     goroutine, WaitTimeout (MaxQueueWait) on the Clock's timer goroutine;
//   - CallCancelled when a queued task is withdrawn, on the goroutine that
//     withdrew it.
//
// Every CallPermitted is followed by exactly one CallFinished. A task refused
// because the pool is closed, or submitted with a context already done,
// publishes nothing. Listeners never run under the pool's lock; a panicking
// listener is recovered and ignored. OnEvent panics if f is nil.
func (p *Pool) OnEvent(f func(Event)) (remove func()) { return p.events.add(f) }

func (p *Pool) publish(t EventType, r Reason) {
	if !p.events.active() {
		return
	}
	p.events.publish(Event{Type: t, Name: p.name, Time: p.clock.Now(), Reason: r})
}

func (p *Pool) now() time.Duration { return sinceEpoch(p.clock, p.epoch) }

// submit admits t (a new task not yet shared with any other goroutine) or
// decides its outcome at once.
func (p *Pool) submit(t *poolTask, ctx context.Context) {
	if ctx.Err() != nil {
		t.err = &withdrawnError{pool: p.name, cause: context.Cause(ctx)}
		t.job.fire(taskWithdrawn)
		return
	}
	t.pool = p
	t.ctx = ctx
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		t.err = ErrPoolClosed
		t.job.fire(taskRejected)
	case len(p.idle) > 0:
		// The most recently idle worker takes it: the longest idle ones are
		// the first to retire.
		w := p.idle[len(p.idle)-1]
		p.idle[len(p.idle)-1] = nil
		p.idle = p.idle[:len(p.idle)-1]
		t.state.Store(taskRunning)
		p.active++
		p.running.push(t)
		p.mu.Unlock()
		w.wake <- t // never blocks: an idle worker's channel is empty
	case p.workers < p.cfg.MaxWorkers:
		t.state.Store(taskRunning)
		p.workers++
		p.active++
		p.running.push(t)
		p.mu.Unlock()
		go p.work(&poolWorker{wake: make(chan *poolTask, 1)}, t)
	case p.queue.n < p.cfg.QueueCapacity:
		t.queued = true
		p.queue.push(t)
		if p.cfg.MaxQueueWait > 0 {
			now := p.now()
			t.deadline = addSaturating(now, p.cfg.MaxQueueWait)
			if p.waitTimer == nil {
				p.armWaitTimerLocked(now, t.deadline)
			}
		}
		if ctx.Done() != nil {
			// Registered under mu so that the worker which takes t reads
			// t.stop after this write. AfterFunc runs onCtxDone on a new
			// goroutine, never here, so it cannot deadlock on mu.
			t.stop = context.AfterFunc(ctx, t.onCtxDone)
		}
		p.mu.Unlock()
	default:
		p.mu.Unlock()
		p.publish(CallRejected, QueueFull)
		t.err = p.errQueueFull
		t.job.fire(taskRejected)
	}
}

// work is the loop of one worker goroutine: it runs t, then the tasks it
// takes from the queue or receives while idle, until it retires.
func (p *Pool) work(w *poolWorker, t *poolTask) {
	for t != nil {
		p.run(t)
		t = p.next(w, t)
	}
}

// run executes a task this worker owns (its state is taskRunning) and
// delivers its outcome on this goroutine.
func (p *Pool) run(t *poolTask) {
	if t.stop != nil {
		// The task is running: its context no longer withdraws it.
		t.stop()
		t.stop = nil
	}
	if err := t.ctx.Err(); err != nil {
		// Handed to a worker, but its submitter gave up before it started:
		// withdrawn, as if it had still been queued.
		t.err = &withdrawnError{pool: p.name, cause: context.Cause(t.ctx)}
		p.publish(CallCancelled, 0)
		t.job.fire(taskWithdrawn)
		return
	}
	p.publish(CallPermitted, 0)
	ctx, cancel := context.WithCancelCause(t.ctx)
	t.mu.Lock()
	t.cancel = cancel
	cause := t.interrupted
	t.mu.Unlock()
	if cause != nil {
		cancel(cause)
	}
	t.job.exec(ctx)
	cancel(nil)
	t.ctx = nil // no one reads it once the task runs; let it be collected
	p.publish(CallFinished, 0)
	t.job.fire(taskCompleted)
}

// next does the bookkeeping after done was delivered and returns the
// worker's next task, or nil when the worker retires. An idle worker parks
// on its wake channel here.
func (p *Pool) next(w *poolWorker, done *poolTask) *poolTask {
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
	if p.workers > p.cfg.CoreWorkers && p.keepTimer == nil {
		p.armKeepTimerLocked(w.idleSince, p.idle[0].idleSince+p.cfg.KeepAlive)
	}
	p.mu.Unlock()
	return <-w.wake // a task, or nil: retired by the keep-alive timer or Close
}

// dequeueLocked pops queued tasks until it wins the CAS of one. A task whose
// CAS fails was withdrawn concurrently; its withdrawer, finding it unlinked,
// delivers it.
func (p *Pool) dequeueLocked() *poolTask {
	for t := p.queue.head; t != nil; t = p.queue.head {
		p.unqueueLocked(t)
		if t.state.CompareAndSwap(taskQueued, taskRunning) {
			return t
		}
	}
	return nil
}

func (p *Pool) unqueueLocked(t *poolTask) {
	p.queue.remove(t)
	t.queued = false
}

// withdraw is called by the goroutine whose CAS withdrew t from the queue:
// it unlinks t (unless a worker or Close already did), stops watching its
// context, and publishes CallCancelled. The caller then delivers t.
func (p *Pool) withdraw(t *poolTask) {
	p.mu.Lock()
	if t.queued {
		p.unqueueLocked(t)
	}
	stop := t.stop
	t.stop = nil
	p.mu.Unlock()
	if stop != nil {
		stop()
	}
	p.publish(CallCancelled, 0)
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
	for len(p.idle) > 0 && p.workers > p.cfg.CoreWorkers && p.idle[0].idleSince+p.cfg.KeepAlive <= now {
		w := p.idle[0]
		n := copy(p.idle, p.idle[1:])
		p.idle[n] = nil
		p.idle = p.idle[:n]
		p.workers--
		w.wake <- nil // never blocks: an idle worker's channel is empty
	}
	if len(p.idle) > 0 && p.workers > p.cfg.CoreWorkers {
		p.armKeepTimerLocked(now, p.idle[0].idleSince+p.cfg.KeepAlive)
	}
}

// armWaitTimerLocked arms the MaxQueueWait timer. Queue deadlines are in
// queue order (MaxQueueWait is fixed), so one timer for the head suffices.
func (p *Pool) armWaitTimerLocked(now, deadline time.Duration) {
	p.waitTimer = p.clock.AfterFunc(max(deadline-now, 0), p.onWaitTimer)
}

// onWaitTimer runs on the Clock's timer goroutine: it rejects (WaitTimeout)
// the queued tasks whose deadline has passed, re-arms for the new head, and
// delivers the rejections on this goroutine, outside mu.
func (p *Pool) onWaitTimer() {
	p.mu.Lock()
	p.waitTimer = nil
	now := p.now()
	var expired poolTaskList
	for t := p.queue.head; t != nil && t.deadline <= now; t = p.queue.head {
		p.unqueueLocked(t)
		if t.state.CompareAndSwap(taskQueued, taskRejected) {
			expired.push(t)
		}
	}
	if h := p.queue.head; h != nil {
		p.armWaitTimerLocked(now, h.deadline)
	}
	p.mu.Unlock()
	for t := expired.head; t != nil; t = expired.head {
		expired.remove(t)
		if t.stop != nil {
			t.stop()
			t.stop = nil
		}
		p.publish(CallRejected, WaitTimeout)
		t.err = p.errWaitTimeout
		t.job.fire(taskRejected)
	}
}

// stopIfDoneLocked closes p.stopped once the pool is closed and its last
// worker has left (the queue is then empty: it is non-empty only while
// MaxWorkers run), and stops the MaxQueueWait timer, which has nothing left
// to expire.
func (p *Pool) stopIfDoneLocked() {
	if !p.closed || p.workers != 0 {
		return
	}
	select {
	case <-p.stopped:
	default:
		close(p.stopped)
	}
	if p.waitTimer != nil {
		p.waitTimer.Stop()
		p.waitTimer = nil
	}
}

// Close stops the pool. It returns at once if the pool has already stopped.
// From the first Close on, Submit rejects new tasks with ErrPoolClosed and
// idle workers retire. Close then waits, until ctx ends, for the queued and
// running tasks to finish (drain) and for every worker to exit, and returns
// nil.
//
// If ctx ends first, Close cancels: it withdraws the tasks still queued
// (their error matches ErrCancelled and ErrPoolClosed; CallCancelled is
// published), cancels the contexts of the running tasks with cause
// ErrPoolClosed, and returns ctx.Err() without waiting for them: a task
// that ignores its context runs to its end, and its Future is then done.
// Call Close again to wait for that. Close(ctx) with ctx already done cancels
// at once.
//
// A task must not call Close of its own pool with a context that never ends:
// Close would wait for the task's own worker.
func (p *Pool) Close(ctx context.Context) error {
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
	var withdrawn poolTaskList
	for t := p.queue.head; t != nil; t = p.queue.head {
		p.unqueueLocked(t)
		if t.state.CompareAndSwap(taskQueued, taskWithdrawn) {
			withdrawn.push(t)
		}
	}
	running := make([]*poolTask, 0, p.running.n)
	for t := p.running.head; t != nil; t = t.next {
		running = append(running, t)
	}
	p.mu.Unlock()
	for t := withdrawn.head; t != nil; t = withdrawn.head {
		withdrawn.remove(t)
		if t.stop != nil {
			t.stop()
			t.stop = nil
		}
		p.publish(CallCancelled, 0)
		t.err = &withdrawnError{pool: p.name, cause: ErrPoolClosed}
		t.job.fire(taskWithdrawn)
	}
	for _, t := range running {
		t.interrupt(ErrPoolClosed)
	}
	return ctx.Err()
}
