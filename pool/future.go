package pool

import (
	"context"
	"runtime/debug"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/outcome"
)

// Future is the outcome of a task submitted to a Pool with Submit. It has
// the three outcomes of a bulkhead.Acquisition plus the task's value:
//   - ran: a worker ran the function; Ran is true and Err returns the
//     function's error (nil on success, a *PanicError if it panicked, a
//     *GoexitError if it called runtime.Goexit) and Value its value (the
//     zero T after a panic or a Goexit);
//   - rejected: the task never ran; Err returns a *bulkhead.FullError
//     (NoWait or QueueFull at submission, WaitTimeout after MaxQueueWait in
//     the queue) or ErrClosed;
//   - withdrawn: the task did not run because its context ended before a
//     worker started it, Cancel was called while it was queued, or Close
//     gave up while it was queued; Err matches bulkhead.ErrCancelled and,
//     for a context, wraps context.Cause of it (so errors.Is(err,
//     context.DeadlineExceeded) works), for Close ErrClosed.
//
// The outcome is decided once, by one compare-and-swap on the task's state
// (see Pool), and published at once: Done is closed and Err, Value and Ran
// answer before any callback runs. A Future is safe for concurrent use.
type Future[T any] struct {
	task
	fn    func(context.Context) (T, error)
	value T
	// The callbacks are kept in the task's cell (a func(T, error) in each
	// any: the task is untyped), guarded by its lock until the outcome is
	// published and owned by the publishing goroutine afterwards.
}

// Submit hands fn to p and returns its Future at once; it never blocks and
// never runs fn on the calling goroutine.
//
// fn runs on a worker with a context derived from ctx: it is cancelled when
// ctx ends, when Future.Cancel is called, or when Close gives up waiting
// (cause ErrClosed). If ctx ends before a worker starts fn (typically while
// the task is queued), the task is withdrawn and fn never runs (see
// Future); if ctx is already done, the Future is withdrawn at once. A task
// that finds no idle worker and cannot start one is queued, or rejected at
// once with a *bulkhead.FullError: NoWait if MaxQueueWait is zero,
// QueueFull if the queue is full. A closed pool rejects with ErrClosed.
//
// A queued task costs a small record and, if ctx can be cancelled, a
// context.AfterFunc registration: no goroutine and no timer of its own.
//
// Submit panics if ctx, p or fn is nil, with a message naming the function
// and the argument ("pool: Submit called with a nil context"): these are programming
// errors, not outcomes, and every entry point of the package that takes a
// context (Future.Get, Pool.Close, Registry.Close) treats a nil one the same
// way.
func Submit[T any](ctx context.Context, p *Pool, fn func(ctx context.Context) (T, error)) *Future[T] {
	if ctx == nil {
		panic("pool: Submit called with a nil context")
	}
	if p == nil {
		panic("pool: Submit called with a nil *Pool")
	}
	if fn == nil {
		panic("pool: Submit called with a nil func")
	}
	f := &Future[T]{fn: fn}
	f.job = f
	p.submit(&f.task, ctx)
	return f
}

// exec runs fn on the worker. A panic is recovered into a *PanicError. A
// runtime.Goexit looks the same here (recover returns nil), but the
// goroutine goes on ending; the worker that takes over calls exited.
func (f *Future[T]) exec(ctx context.Context) {
	returned := false
	defer func() {
		if !returned {
			f.err = &PanicError{Value: recover(), Stack: debug.Stack()}
		}
	}()
	f.value, f.err = f.fn(ctx)
	returned = true
}

func (f *Future[T]) exited() {
	var stack []byte
	if pe, ok := f.err.(*PanicError); ok {
		stack = pe.Stack
	}
	f.err = &GoexitError{Stack: stack}
}

func (f *Future[T]) publish(s uint32) {
	f.fn = nil // let the function's captures be collected
	f.cell.Lock()
	f.cell.PublishLocked(s)
	f.cell.Unlock()
}

// call runs cb, a func(T, error): OnDone keeps nothing else in the cell.
func (f *Future[T]) call(cb any) {
	v, err := f.result()
	cb.(func(T, error))(v, err)
}

func (f *Future[T]) result() (T, error) {
	if f.cell.Load()&outcome.Mask != taskCompleted {
		var zero T
		return zero, f.err
	}
	return f.value, f.err
}

// Done returns a channel that is closed when the outcome is decided.
func (f *Future[T]) Done() <-chan struct{} { return f.cell.Done() }

// Err returns bulkhead.ErrPending while the outcome is not decided; then the
// function's error if the task ran, or the rejection or withdrawal error
// (see Future).
func (f *Future[T]) Err() error {
	if !f.cell.IsPublished() {
		return bulkhead.ErrPending
	}
	return f.err
}

// Value returns the function's value once the task has run, and the zero T
// otherwise (pending, rejected, withdrawn).
func (f *Future[T]) Value() T {
	if !f.Ran() {
		var zero T
		return zero
	}
	return f.value
}

// Ran reports whether the task ran, so that Err is the function's own
// error. It is false while the outcome is not decided.
func (f *Future[T]) Ran() bool { return f.cell.Load() == taskCompleted|outcome.Published }

// Get waits for the outcome and returns Value and Err. If ctx ends first it
// returns the zero T and ctx.Err(); the task is not affected (use Cancel, or
// the context given to Submit, to stop it). Get panics if ctx is nil
// ("pool: Future.Get called with a nil context"), as Submit does.
//
// Get returns once the outcome is decided. The worker that ran the task is
// free again a moment later, after the task's callbacks (OnDone) have run
// on it: a Submit right after Get may still find that worker busy (and,
// with no queue, be rejected).
func (f *Future[T]) Get(ctx context.Context) (T, error) {
	if ctx == nil {
		panic("pool: Future.Get called with a nil context")
	}
	if !f.cell.IsPublished() {
		select {
		case <-f.Done():
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
	return f.result()
}

// OnDone registers cb to run exactly once with Value and Err.
//
// If the outcome is already decided, cb runs at once on the calling
// goroutine, and a panic of cb propagates to the caller of OnDone.
// Otherwise cb runs on the goroutine that decides the outcome, after Done is
// closed:
//   - the worker, for a task that ran: after the function returned and
//     CallFinished was published (keep cb short: the worker takes no other
//     task meanwhile);
//   - the caller of Cancel or Close, for a task they withdrew;
//   - the goroutine that context.AfterFunc starts when the submission
//     context ends, for a task withdrawn that way;
//   - the Clock's timer goroutine, for WaitTimeout.
//
// Callbacks registered before the outcome run in registration order, each
// exactly once even if one of them panics; a panic among them goes to the
// pool's callback panic handler once they all ran (WithCallbackPanicHandler;
// by default it ends the program). A callback that calls runtime.Goexit
// ends the goroutine that runs it, as Goexit does anywhere; the callbacks
// after it (and the other outcomes that goroutine had to deliver) then run
// on a new goroutine, and a worker is replaced by one that goes on where
// it stopped, so the pool keeps its workers. No Future waits for the callbacks of
// another: a timer tick or a Close that decides several outcomes publishes
// them all before it runs any callback. Callbacks never run under a lock of
// the pool, so they may submit tasks, cancel and call Close with a context
// that ends. OnDone panics if cb is nil.
func (f *Future[T]) OnDone(cb func(v T, err error)) {
	if cb == nil {
		panic("pool: Future.OnDone called with a nil func")
	}
	if !f.cell.Register(cb) {
		cb(f.result())
	}
}

// Cancel withdraws the task if it is still queued and reports whether it
// did: then the function never runs, Err returns bulkhead.ErrCancelled,
// CallCancelled is published and the callbacks run on the calling
// goroutine. If a worker already runs the task, Cancel cancels the task's
// context (cause bulkhead.ErrCancelled) and returns false; the Future is
// done when the function returns. After the outcome is decided, Cancel does
// nothing and returns false.
func (f *Future[T]) Cancel() bool {
	if f.cell.CompareAndSwap(taskQueued, taskWithdrawn) {
		f.err = bulkhead.ErrCancelled
		f.withdrawn()
		return true
	}
	if f.cell.Load() == taskRunning {
		f.interrupt(bulkhead.ErrCancelled)
	}
	return false
}
