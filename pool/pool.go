package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/clock"
	"github.com/rxbulkhead/bulkhead/internal/publish"
)

// ErrClosed is the error of a task submitted to a closed Pool. A task still
// queued when Close gives up waiting is withdrawn with an error that matches
// both bulkhead.ErrCancelled and ErrClosed, and a running task's context is
// cancelled with ErrClosed as its cause. A closed Registry creates no pool:
// what would create one fails with an error matching ErrClosed (see
// Registry.Close).
var ErrClosed = errors.New("pool: closed")

// Pool is a bulkhead for blocking code: a bounded set of worker goroutines
// with a bounded FIFO queue (see the package doc).
//
// Tasks are submitted with Submit. A task goes to an idle worker if there is
// one, else to a new worker while fewer than MaxWorkers run, else to the
// queue if MaxQueueWait allows waiting and the queue has room; otherwise it
// is rejected at once with a *bulkhead.FullError. Workers are started
// lazily; those above CoreWorkers retire after KeepAlive idle.
//
// Who owns a worker: the goroutine that starts it hands it its first task;
// from then on the worker goroutine runs one task at a time and delivers
// its outcome itself, then takes the head of the queue, or parks in p.idle
// until a submitter hands it a task, or retires (keep-alive timer, Close).
//
// Invariants, all guarded by mu:
//   - a worker is idle (in p.idle, parked on its wake channel, which is then
//     empty) or active (running or delivering one task); workers = idle +
//     active.
//   - the queue is non-empty only while no worker is idle and MaxWorkers
//     run, so a newcomer never overtakes a queued task.
//   - a task leaves the queue through exactly one CAS on its state, from
//     taskQueued to running (a worker took it), withdrawn (its context
//     ended, Future.Cancel, or Close gave up) or rejected (MaxQueueWait
//     expired); only the winner publishes its outcome. Withdrawals CAS
//     outside mu and then unlink; the worker and the timer CAS under mu and
//     unlink at once.
//   - the MaxQueueWait timer is armed only while the queue is non-empty:
//     the unlink that empties the queue stops it; waitGen makes a stopped
//     timer that fires anyway do nothing (keepGen does the same for the
//     keep-alive timer).
//   - a running task is in p.running until its worker has delivered it, so
//     Close can cancel its context.
//   - user code (a task, a listener, a callback, the callback panic
//     handler) that calls runtime.Goexit ends its goroutine but loses
//     nothing: every step of a worker and of a delivery is recorded before
//     the user code it runs, and a deferred guard hands what is left to a
//     new goroutine (see work and deliver). A worker replaced that way is
//     the same worker for the counts.
//
// Callbacks (Future.OnDone) and event listeners never run while mu is held.
type Pool struct {
	name            string
	cfg             Config
	clock           bulkhead.Clock
	epoch           time.Time // idle and queue deadlines are offsets from epoch
	onCallbackPanic func(value any, stack []byte)

	events publish.Listeners[bulkhead.Event]

	errNoWait      *bulkhead.FullError
	errQueueFull   *bulkhead.FullError
	errWaitTimeout *bulkhead.FullError

	mu      sync.Mutex
	workers int       // live workers: PoolSize
	active  int       // workers holding a task: ActiveWorkers
	idle    []*worker // idle workers, longest idle first
	queue   taskList  // tasks waiting for a worker, oldest first
	running taskList  // tasks taken by a worker and not yet delivered

	keepTimer bulkhead.Timer // retires idle workers above CoreWorkers
	keepGen   uint64         // identifies keepTimer; a stale or stopped timer does nothing
	waitTimer bulkhead.Timer // expires queued tasks (MaxQueueWait)
	waitGen   uint64         // identifies waitTimer, as keepGen

	closed  bool
	stopped chan struct{} // closed once closed and every worker has exited
}

// New returns a Pool named name (used in errors, events and metrics). No
// worker starts until the first task is submitted. It fails with a
// *bulkhead.ConfigError if cfg is not valid, and with an error if name is
// empty or an option is invalid.
func New(name string, cfg Config, opts ...Option) (*Pool, error) {
	if name == "" {
		return nil, errors.New("pool: New: name must not be empty")
	}
	if err := cfg.validateFor(name); err != nil {
		return nil, err
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("pool %q: %w", name, err)
	}
	return &Pool{
		name:            name,
		cfg:             cfg,
		clock:           o.clock,
		epoch:           o.clock.Now(),
		onCallbackPanic: o.onCallbackPanic,
		errNoWait:       &bulkhead.FullError{Name: name, Reason: bulkhead.NoWait},
		errQueueFull:    &bulkhead.FullError{Name: name, Reason: bulkhead.QueueFull},
		errWaitTimeout:  &bulkhead.FullError{Name: name, Reason: bulkhead.WaitTimeout},
		stopped:         make(chan struct{}),
	}, nil
}

// Name returns the pool's name.
func (p *Pool) Name() string { return p.name }

// Config returns the pool's configuration.
func (p *Pool) Config() Config { return p.cfg }

// Metrics is a snapshot of a Pool's state, named after resilience4j's
// ThreadPoolBulkhead metrics.
type Metrics struct {
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
func (p *Pool) Metrics() Metrics {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Metrics{
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
//     Future is done, with the time it ran in Event.CallDuration (zero for
//     a task started while no listener was registered);
//   - CallRejected when a task is rejected: NoWait and QueueFull on the
//     submitting goroutine, WaitTimeout (MaxQueueWait) on the Clock's timer
//     goroutine;
//   - CallCancelled when a queued task is withdrawn, on the goroutine that
//     withdrew it.
//
// The CallPermitted of a task that was queued, and its CallRejected
// (WaitTimeout), carry in Event.Wait the time it spent in the queue; Wait
// is zero for a task that went to a worker at once, for NoWait and
// QueueFull, and for a task queued without a MaxQueueWait while no
// listener was registered.
//
// Every CallPermitted is followed by exactly one CallFinished. A task refused
// because the pool is closed, or submitted with a context already done,
// publishes nothing. Listeners never run under the pool's lock; a panicking
// listener is recovered and ignored. A listener that calls runtime.Goexit
// ends its goroutine, and the listeners after it miss that event; what the
// goroutine had still to deliver (outcomes, callbacks) is delivered by a
// new goroutine, and a worker is replaced as for a task's Goexit (see
// GoexitError). OnEvent panics if f is nil.
func (p *Pool) OnEvent(f func(bulkhead.Event)) (remove func()) {
	if f == nil {
		panic("pool: OnEvent called with a nil listener")
	}
	return p.events.Add(f)
}

func (p *Pool) publish(t bulkhead.EventType, r bulkhead.Reason) {
	if !p.events.Active() {
		return
	}
	p.events.Publish(bulkhead.Event{Type: t, Name: p.name, Time: p.clock.Now(), Reason: r})
}

func (p *Pool) now() time.Duration { return clock.Since[bulkhead.Timer](p.clock, p.epoch) }

// submit admits t (a new task not yet shared with any other goroutine) or
// decides its outcome at once.
func (p *Pool) submit(t *task, ctx context.Context) {
	t.pool = p
	if ctx.Err() != nil {
		t.err = &withdrawnError{pool: p.name, cause: context.Cause(ctx)}
		t.decide(taskWithdrawn)
		return
	}
	t.ctx = ctx
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		t.err = ErrClosed
		t.decide(taskRejected)
	case len(p.idle) > 0:
		// The most recently idle worker takes it: the longest idle ones are
		// the first to retire.
		w := p.idle[len(p.idle)-1]
		p.idle[len(p.idle)-1] = nil
		p.idle = p.idle[:len(p.idle)-1]
		t.cell.Store(taskRunning)
		p.active++
		p.running.push(t)
		p.mu.Unlock()
		w.wake <- t // never blocks: an idle worker's channel is empty
	case p.workers < p.cfg.MaxWorkers:
		t.cell.Store(taskRunning)
		p.workers++
		p.active++
		p.running.push(t)
		p.mu.Unlock()
		go p.work(&worker{wake: make(chan *task, 1)}, t)
	case p.cfg.MaxQueueWait == 0:
		p.mu.Unlock()
		p.reject(t, p.errNoWait)
	case p.queue.n < p.cfg.QueueCapacity:
		p.enqueueLocked(t, ctx)
		p.mu.Unlock()
	default:
		p.mu.Unlock()
		p.reject(t, p.errQueueFull)
	}
}

// reject publishes CallRejected and rejects t (not yet shared) with err.
func (p *Pool) reject(t *task, err *bulkhead.FullError) {
	p.publish(bulkhead.CallRejected, err.Reason)
	t.err = err
	t.decide(taskRejected)
}
