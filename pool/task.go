package pool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/outcome"
)

// States of a task, in the low byte of its cell's state word; the cell
// sets outcome.Published once the outcome is published.
const (
	taskQueued    uint32 = iota // waiting in the queue (or not yet admitted)
	taskRunning                 // taken by a worker
	taskCompleted               // ran; the outcome is the function's
	taskWithdrawn               // withdrawn before a worker started it (ErrCancelled)
	taskRejected                // never queued (NoWait, QueueFull, ErrClosed) or expired (WaitTimeout)
)

// job is the typed part of a task: the *Future[T] that embeds it.
type job interface {
	// exec runs the function and stores its result.
	exec(ctx context.Context)
	// exited records that the function called runtime.Goexit: exec never
	// returned, and its outcome is a *GoexitError.
	exited()
	// publish publishes the decided outcome (Done closed, Err and Value
	// answer) and keeps the callbacks registered so far for the delivery.
	publish(outcome uint32)
	// call runs one of those callbacks with Value and Err.
	call(cb any)
}

// task is the untyped record of one submitted task, embedded in its
// Future. Who may write what:
//   - cell's state moves by the CAS described on Pool; err is written only
//     by the goroutine that decided the outcome, before it publishes.
//   - prev and next (the queue, then the running set), deadline and stop
//     belong to the Pool's mu; the winner of the task's CAS owns
//     stop (and prev and next, for its local list) once the task has left
//     the queue.
//   - cancel and interrupted (and the Future's callbacks) are guarded by
//     the cell's lock.
type task struct {
	cell outcome.Cell[any] // each callback is its Future's func(T, error)
	pool *Pool
	job  job
	ctx  context.Context // the context given to Submit; nil once the task ran
	err  error

	prev, next *task
	deadline   time.Duration // MaxQueueWait deadline, offset from the pool's epoch
	// queuedAt is when t was queued, an offset from the pool's epoch, if
	// queued says it is known (a bounded wait, or a listener registered at
	// enqueue time): Event.Wait of its CallPermitted or CallRejected
	// (WaitTimeout). Written under mu by enqueueLocked, read by the
	// goroutine that took t from the queue under mu.
	queuedAt time.Duration
	queued   bool
	stop     func() bool // stops the context watch of a queued task

	cancel      context.CancelCauseFunc // cancels the running task's context
	interrupted error                   // cause of an interrupt that came before cancel was set
}

// decide publishes the decided outcome of t, a task not yet shared with
// any other goroutine (Submit has not returned its Future), so that no
// callback can be registered yet and no user code runs. err is written
// before.
func (t *task) decide(outcome uint32) {
	t.job.publish(outcome)
}

// withdrawn delivers the outcome of t, withdrawn from the queue by the
// calling goroutine (which won its CAS and wrote err): CallCancelled, then
// the outcome, then the callbacks.
func (t *task) withdrawn() {
	t.pool.withdraw(t)
	t.pool.deliver(&delivery{events: 1, event: bulkhead.CallCancelled, state: taskWithdrawn, one: t})
}

// onCtxDone runs on its own goroutine (context.AfterFunc) when the
// submission context of a queued task ends: it withdraws the task if no
// worker took it first.
func (t *task) onCtxDone() {
	if !t.cell.CompareAndSwap(taskQueued, taskWithdrawn) {
		return
	}
	t.err = &withdrawnError{pool: t.pool.name, cause: context.Cause(t.ctx)}
	t.withdrawn()
}

// interrupt cancels the context of a running task with cause. If the
// worker has not created that context yet, it will cancel it as soon as it
// does. After the task has finished it does nothing.
func (t *task) interrupt(cause error) {
	t.cell.Lock()
	if t.interrupted == nil {
		t.interrupted = cause
	}
	cancel := t.cancel
	t.cell.Unlock()
	if cancel != nil {
		cancel(cause)
	}
}

// withdrawnError is the error of a task withdrawn from the queue by the end
// of its context or by Close: it matches bulkhead.ErrCancelled and wraps
// the cause.
type withdrawnError struct {
	pool  string
	cause error
}

func (e *withdrawnError) Error() string {
	return fmt.Sprintf("pool %q: task withdrawn before it ran: %v", e.pool, e.cause)
}

func (e *withdrawnError) Is(target error) bool { return target == bulkhead.ErrCancelled }

func (e *withdrawnError) Unwrap() error { return e.cause }

// PanicError is the error of a task whose function panicked. The Pool
// recovers the panic so that the worker survives; Value is what was passed
// to panic and Stack the worker's stack at the panic.
type PanicError struct {
	Value any
	Stack []byte
}

// Error returns "pool: task panicked: VALUE".
func (e *PanicError) Error() string { return fmt.Sprintf("pool: task panicked: %v", e.Value) }

// Unwrap returns Value if it is an error, so errors.Is and errors.As see it.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// ErrGoexit is matched (errors.Is) by the error of a task whose function
// called runtime.Goexit; see GoexitError.
var ErrGoexit = errors.New("pool: task exited its goroutine (runtime.Goexit)")

// GoexitError is the error of a task whose function called runtime.Goexit
// instead of returning (t.FailNow, t.SkipNow and log.Fatal's cousins in
// tests do). Goexit ends the worker goroutine and recover cannot stop it:
// the Pool publishes the outcome from a deferred path and a new goroutine
// takes the worker's place, so the Future is done as for any task that ran
// (Ran is true, Value is the zero value), its callbacks run, and the pool
// keeps its workers. Stack is the worker's stack while Goexit unwound it
// (it shows where Goexit was called). errors.Is(err, ErrGoexit) and
// errors.As(err, new(*GoexitError)) both match it.
type GoexitError struct {
	Stack []byte
}

// Error returns ErrGoexit's message.
func (e *GoexitError) Error() string { return ErrGoexit.Error() }

// Is reports whether target is ErrGoexit.
func (e *GoexitError) Is(target error) bool { return target == ErrGoexit }

// callbackPanic is what the default handler raises for a panicking
// Future.OnDone callback: the message carries the callback's own stack, as
// the new goroutine's stack says nothing about it.
type callbackPanic struct {
	pool  string
	value any
	stack []byte
}

func (e *callbackPanic) Error() string {
	return fmt.Sprintf("pool %q: a Future.OnDone callback panicked: %v\n\ncallback goroutine at the panic:\n%s", e.pool, e.value, e.stack)
}
