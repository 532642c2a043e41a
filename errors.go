package bulkhead

import (
	"errors"
	"fmt"
)

// ErrBulkheadFull is the errors.Is target of every rejection. The concrete
// error is always a *FullError that says which bulkhead and why.
var ErrBulkheadFull = errors.New("bulkhead is full")

// ErrCancelled is the outcome of a call withdrawn while it waited: an
// Acquisition cancelled before a permit was granted, or a Pool task whose
// context ended (or that was cancelled) before a worker started it. A
// withdrawn call is not a rejection.
var ErrCancelled = errors.New("bulkhead: cancelled while waiting")

// ErrPending is what Acquisition.Err returns while the outcome is unknown.
var ErrPending = errors.New("bulkhead: permit acquisition pending")

// Reason says why a call was rejected.
type Reason uint8

const (
	// NoWait: all permits were taken and the bulkhead does not wait
	// (MaxWaitDuration is zero, or TryAcquirePermission was used).
	NoWait Reason = iota + 1
	// QueueFull: the queue was full — for a Semaphore, it held
	// MaxQueuedCalls waiters (FIFO order, or no queue at all); for the
	// pool, its task queue held its capacity.
	QueueFull
	// WaitTimeout: the call waited MaxWaitDuration without a permit.
	WaitTimeout
	// Evicted: in LIFO order, a newer call took this waiter's place in a
	// full queue.
	Evicted
	// Unavailable: the bulkhead could not decide, so it refused the call
	// without counting it against its limit: the store that holds its
	// permits (Redis, for a fleet bulkhead of contrib/redis) was
	// unreachable or refused the request, or the bulkhead was closed. The
	// call's error says which; it is not a *FullError (a fleet bulkhead's
	// *StoreError matches its ErrUnavailable or ErrRefused, a closed one
	// its ErrClosed). A Semaphore and a Pool never reject for it.
	Unavailable
)

// String returns the reason as it appears in error messages and events.
func (r Reason) String() string {
	switch r {
	case NoWait:
		return "no wait"
	case QueueFull:
		return "queue full"
	case WaitTimeout:
		return "wait timeout"
	case Evicted:
		return "evicted"
	case Unavailable:
		return "unavailable"
	case 0:
		return "none"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// FullError is the error of a rejected call. errors.Is(err, ErrBulkheadFull)
// is true for every *FullError.
type FullError struct {
	Name   string // the bulkhead's name
	Reason Reason // why the call was rejected
}

// Error returns `bulkhead "NAME": full, does not permit further calls (REASON)`.
// Every error of this module names a bulkhead the same way: the name
// quoted with %q after the word bulkhead, then a colon.
func (e *FullError) Error() string {
	return fmt.Sprintf("bulkhead %q: full, does not permit further calls (%s)", e.Name, e.Reason)
}

// Is reports whether target is ErrBulkheadFull.
func (e *FullError) Is(target error) bool { return target == ErrBulkheadFull }
