package bulkhead

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// States of a pool task. The low byte is the state; firedBit (shared with
// Acquisition) is set once the outcome has been delivered.
const (
	taskQueued    uint32 = iota // waiting in the queue (or not yet admitted)
	taskRunning                 // taken by a worker
	taskCompleted               // ran; the outcome is the function's
	taskWithdrawn               // withdrawn before a worker started it (ErrCancelled)
	taskRejected                // never queued (QueueFull, ErrPoolClosed) or expired (WaitTimeout)
)

// poolJob is the typed part of a task: the *Future[T] that embeds it.
type poolJob interface {
	exec(ctx context.Context) // runs the function and stores its result
	fire(outcome uint32)      // publishes the outcome: Done, callbacks
}

// poolTask is the untyped record of one submitted task, embedded in its
// Future. Who may write what:
//   - state moves by the CAS described on Pool; err is written only by the
//     goroutine that decided the outcome, before fire sets firedBit.
//   - prev and next (the queue, then the running set), queued, deadline and
//     stop belong to the Pool's mu; the winner of the task's CAS owns stop
//     once the task has left the queue.
//   - cancel, interrupted, done (and the Future's callbacks) are guarded by mu.
type poolTask struct {
	state  atomic.Uint32
	queued bool // in the pool's queue (under the Pool's mu); packed next to state
	pool   *Pool
	job    poolJob
	ctx    context.Context // the context given to Submit
	err    error

	prev, next *poolTask
	deadline   time.Duration // MaxQueueWait deadline, offset from the pool's epoch
	stop       func() bool   // stops the context watch of a queued task

	mu          sync.Mutex
	cancel      context.CancelCauseFunc // cancels the running task's context
	interrupted error                   // cause of an interrupt that came before cancel was set
	done        chan struct{}           // created lazily by Done
}

// onCtxDone runs on its own goroutine (context.AfterFunc) when the
// submission context of a queued task ends: it withdraws the task if no
// worker took it first.
func (t *poolTask) onCtxDone() {
	if !t.state.CompareAndSwap(taskQueued, taskWithdrawn) {
		return
	}
	t.err = &withdrawnError{pool: t.pool.name, cause: context.Cause(t.ctx)}
	t.pool.withdraw(t)
	t.job.fire(taskWithdrawn)
}

// interrupt cancels the context of a running task with cause. If the worker
// has not created that context yet, it will cancel it as soon as it does.
// After the task has finished it does nothing.
func (t *poolTask) interrupt(cause error) {
	t.mu.Lock()
	if t.interrupted == nil {
		t.interrupted = cause
	}
	cancel := t.cancel
	t.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
}

// withdrawnError is the error of a task withdrawn from the queue by the end
// of its context or by Close: it matches ErrCancelled and wraps the cause.
type withdrawnError struct {
	pool  string
	cause error
}

func (e *withdrawnError) Error() string {
	return fmt.Sprintf("bulkhead '%s': task withdrawn before it ran: %v", e.pool, e.cause)
}

func (e *withdrawnError) Is(target error) bool { return target == ErrCancelled }

func (e *withdrawnError) Unwrap() error { return e.cause }

// PanicError is the error of a task whose function panicked. The Pool
// recovers the panic so that the worker survives; Value is what was passed
// to panic and Stack the worker's stack at the panic.
type PanicError struct {
	Value any
	Stack []byte
}

// Error returns "bulkhead: task panicked: VALUE".
func (e *PanicError) Error() string { return fmt.Sprintf("bulkhead: task panicked: %v", e.Value) }

// Unwrap returns Value if it is an error, so errors.Is and errors.As see it.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Future is the outcome of a task submitted to a Pool with Submit. It has
// the three outcomes of an Acquisition plus the task's value:
//   - ran: a worker ran the function; Ran is true and Err returns the
//     function's error (nil on success, a *PanicError if it panicked) and
//     Value its value;
//   - rejected: the task never ran; Err returns a *FullError (QueueFull at
//     submission, WaitTimeout after MaxQueueWait in the queue) or
//     ErrPoolClosed;
//   - withdrawn: the task did not run because its context ended before a
//     worker started it, Cancel was called while it was queued, or Close
//     gave up while it was queued; Err matches
//     ErrCancelled and, for a context, wraps context.Cause of it (so
//     errors.Is(err, context.DeadlineExceeded) works), for Close
//     ErrPoolClosed.
//
// A Future is safe for concurrent use.
type Future[T any] struct {
	poolTask
	fn    func(context.Context) (T, error)
	value T
	cb    func(T, error) // guarded by mu; callbacks chained in registration order
}

// Submit hands fn to p and returns its Future at once; it never blocks and
// never runs fn on the calling goroutine.
//
// fn runs on a worker with a context derived from ctx: it is cancelled when
// ctx ends, when Future.Cancel is called, or when Close gives up waiting
// (cause ErrPoolClosed). If ctx ends before a worker starts fn (typically
// while the task is queued), the task is withdrawn and fn never runs (see
// Future); if ctx is already done, the Future is withdrawn at once. A full queue rejects the task at once with a
// *FullError (QueueFull), and a closed pool with ErrPoolClosed.
//
// A queued task costs a small record and, if ctx can be cancelled, a
// context.AfterFunc registration: no goroutine and no timer. Submit panics
// if p, ctx or fn is nil.
func Submit[T any](p *Pool, ctx context.Context, fn func(ctx context.Context) (T, error)) *Future[T] {
	if p == nil {
		panic("bulkhead: Submit called with a nil *Pool")
	}
	if ctx == nil {
		panic("bulkhead: Submit called with a nil context")
	}
	if fn == nil {
		panic("bulkhead: Submit called with a nil func")
	}
	f := &Future[T]{fn: fn}
	f.job = f
	p.submit(&f.poolTask, ctx)
	return f
}

// exec runs fn on the worker. A panic is recovered into a *PanicError.
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

// fire sets the outcome, closes Done and runs the callbacks on the calling
// goroutine, outside any lock. err (and value) are written before.
func (f *Future[T]) fire(outcome uint32) {
	f.fn = nil // let the function's captures be collected
	f.mu.Lock()
	f.state.Store(outcome | firedBit)
	cb := f.cb
	f.cb = nil
	if f.done != nil {
		close(f.done)
	}
	f.mu.Unlock()
	if cb != nil {
		cb(f.result())
	}
}

func (f *Future[T]) result() (T, error) {
	if f.state.Load()&outcomeMask != taskCompleted {
		var zero T
		return zero, f.err
	}
	return f.value, f.err
}

// Done returns a channel that is closed when the outcome is known.
func (f *Future[T]) Done() <-chan struct{} {
	if f.state.Load()&firedBit != 0 {
		return closedChan
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state.Load()&firedBit != 0 {
		return closedChan
	}
	if f.done == nil {
		f.done = make(chan struct{})
	}
	return f.done
}

// Err returns ErrPending while the outcome is unknown; then the function's
// error if the task ran, or the rejection or withdrawal error (see Future).
func (f *Future[T]) Err() error {
	if f.state.Load()&firedBit == 0 {
		return ErrPending
	}
	return f.err
}

// Value returns the function's value once the task has run, and the zero T
// otherwise (pending, rejected, withdrawn).
func (f *Future[T]) Value() T {
	if f.state.Load() != taskCompleted|firedBit {
		var zero T
		return zero
	}
	return f.value
}

// Ran reports whether the task ran, so that Err is the function's own
// error. It is false while the outcome is unknown.
func (f *Future[T]) Ran() bool { return f.state.Load() == taskCompleted|firedBit }

// Get waits for the outcome and returns Value and Err. If ctx ends first it
// returns the zero T and ctx.Err(); the task is not affected (use Cancel, or
// the context given to Submit, to stop it).
func (f *Future[T]) Get(ctx context.Context) (T, error) {
	if f.state.Load()&firedBit == 0 {
		select {
		case <-f.Done():
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
	return f.result()
}

// OnDone registers cb to run exactly once with Value and Err. If the outcome
// is already known, cb runs at once on the calling goroutine. Otherwise it
// runs on the goroutine that decides the outcome: the worker, after the
// function returned and CallFinished was published (keep cb short: the
// worker takes no other task meanwhile); the goroutine that withdrew the
// task (Cancel, Close, or the one context.AfterFunc starts when ctx ends);
// the Clock's timer goroutine for WaitTimeout. Callbacks run in registration
// order and never under a lock of the pool, so they may submit tasks.
// OnDone panics if cb is nil.
func (f *Future[T]) OnDone(cb func(v T, err error)) {
	if cb == nil {
		panic("bulkhead: OnDone called with a nil func")
	}
	if f.state.Load()&firedBit != 0 {
		cb(f.result())
		return
	}
	f.mu.Lock()
	if f.state.Load()&firedBit != 0 {
		f.mu.Unlock()
		cb(f.result())
		return
	}
	if prev := f.cb; prev != nil {
		f.cb = func(v T, err error) { prev(v, err); cb(v, err) }
	} else {
		f.cb = cb
	}
	f.mu.Unlock()
}

// Cancel withdraws the task if it is still queued and reports whether it
// did: then the function never runs, Err returns ErrCancelled, CallCancelled
// is published and the callbacks run on the calling goroutine. If a worker
// already runs the task, Cancel cancels the task's context (cause
// ErrCancelled) and returns false; the Future is done when the function
// returns. After the outcome is known, Cancel does nothing and returns false.
func (f *Future[T]) Cancel() bool {
	if f.state.CompareAndSwap(taskQueued, taskWithdrawn) {
		f.err = ErrCancelled
		f.pool.withdraw(&f.poolTask)
		f.fire(taskWithdrawn)
		return true
	}
	if f.state.Load() == taskRunning {
		f.interrupt(ErrCancelled)
	}
	return false
}
