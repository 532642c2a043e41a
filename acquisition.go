package bulkhead

import (
	"time"

	"github.com/rxbulkhead/bulkhead/internal/outcome"
)

// Outcome states of an Acquisition, in the low byte of its cell's state
// word. The cell sets knownBit (outcome.Published) once the outcome is
// visible (Err answers it, Done is closed), which the deciding goroutine does
// right after its CAS, before any callback runs.
const (
	statePending uint32 = iota
	stateGranted
	stateRejected
	stateCancelled

	outcomeMask = outcome.Mask
	knownBit    = outcome.Published
)

// owner is what a pending Acquisition is waiting on: a Semaphore's queue, the
// goroutine of a FromBlocking bridge, or a custom Bulkhead's withdraw func.
// cancel is Acquisition.Cancel for its acquisitions: it decides the
// withdrawal (decide), makes it visible (settle) at the point where the
// owner has forgotten the waiter, and runs the callbacks, or reports false
// if the outcome was decided first. A Semaphore takes the decision under
// its lock, as it takes every other decision of a queued waiter; the
// others take it first (cancelFirst).
type owner interface {
	cancel(a *Acquisition) bool
}

// Acquisition is the future of one permit request. It has three outcomes:
// granted (Err() == nil), rejected (a *FullError, or the error of a custom
// Bulkhead) and withdrawn (ErrCancelled).
//
// Invariants:
//   - The outcome is decided exactly once, by a compare-and-swap on the
//     state word (decide): a grant, an expiry, an eviction and a Cancel race
//     through that single CAS, and only the winner acts. A Semaphore takes
//     every one of them under its lock (Cancel too, see Semaphore.cancel),
//     so for its waiters the race is decided by who gets the lock first.
//     When Cancel loses to a grant it returns false and the caller owns
//     the permit (it must give it back).
//   - The winner writes err, then makes the outcome visible (settle:
//     knownBit, Done closed) before it runs any callback; a Semaphore does
//     both under its lock, so Metrics and Err never disagree.
//   - Callbacks registered before knownBit are kept in the cell and run
//     once, by the winner (see runCallbacks), in registration order; a
//     callback registered after it runs at once on the registering
//     goroutine. After knownBit, the cell's list is owned by the winner.
//
// The state word, the Done channel and the callback list are an
// internal/outcome.Cell, the one pool.Future uses too; what differs is the
// panic policy of the runner (outcome.RunHandOff here, RunRecover there).
//
// An Acquisition is safe for concurrent use.
type Acquisition struct {
	// cell holds the state word, Done and the callbacks (see the package
	// outcome). A pooled blocking waiter keeps its one-slot channel there
	// (waiter.go) and never publishes through the cell.
	cell outcome.Cell[func(error)]
	// Fields below are owned by the owner's lock (Semaphore.mu) while the
	// acquisition is queued; next also links decided acquisitions on the
	// deciding goroutine's delivery list (see decidedList). An acquisition
	// is in its owner's wait queue iff prev != nil or it is the queue's head
	// (waitState.linked); a pooled blocking waiter is told by its owner's
	// type (isBlocking). Neither has a flag of its own: a queued
	// Acquisition is 96 bytes.
	deadline time.Duration // offset from the owner's epoch
	prev     *Acquisition
	next     *Acquisition

	owner owner
	err   error // written by the deciding goroutine before knownBit is set
}

// grantedAcquisition is shared by every immediately granted request: it is
// immutable (Cancel fails, callbacks run at once), so it costs no allocation.
var grantedAcquisition = newDone(stateGranted, nil)

func newDone(state uint32, err error) *Acquisition {
	a := &Acquisition{err: err}
	a.cell.Store(state | knownBit)
	return a
}

// GrantedAcquisition returns an Acquisition that is already granted. It is meant for
// custom Bulkhead implementations whose permits are always available at once.
func GrantedAcquisition() *Acquisition { return grantedAcquisition }

// RejectedAcquisition returns an Acquisition already rejected with err. It is meant for
// custom Bulkhead implementations. It panics if err is nil.
func RejectedAcquisition(err error) *Acquisition {
	if err == nil {
		panic("bulkhead: RejectedAcquisition called with a nil error")
	}
	return newDone(stateRejected, err)
}

// PendingAcquisition returns a pending Acquisition and the Resolver that
// decides its outcome. It is meant for custom Bulkhead implementations that
// really wait (for example for a permit held in another process): the
// Bulkhead keeps the Resolver in its own queue and returns the Acquisition.
//
// withdraw, if not nil, runs exactly once, on the goroutine whose Cancel won
// the decision, before the Acquisition's callbacks run: it is where the
// Bulkhead forgets the waiter. It must not block.
func PendingAcquisition(withdraw func()) (*Acquisition, *Resolver) {
	a := &Acquisition{owner: withdrawFunc(withdraw)}
	return a, &Resolver{a: a}
}

// withdrawFunc is the owner of an Acquisition made by PendingAcquisition.
type withdrawFunc func()

func (f withdrawFunc) cancel(a *Acquisition) bool {
	if !a.decide(stateCancelled, nil) {
		return false
	}
	a.settle() // visible at once; the Bulkhead forgets the waiter after
	if f != nil {
		f()
	}
	a.runCallbacks()
	return true
}

// Resolver decides the outcome of one Acquisition made by
// PendingAcquisition. Its methods are safe for concurrent use with each
// other and with the Acquisition's Cancel: the first decision wins.
type Resolver struct{ a *Acquisition }

// Grant decides that the permit is granted and delivers the outcome: Done
// is closed at once, then the callbacks run on the calling goroutine before
// Grant returns (a panicking callback: see OnDone). It reports
// false if the outcome was already decided (Cancel, Grant or Reject came
// first); the permit was then not handed over, and the caller still owns it
// and must give it back.
func (r *Resolver) Grant() bool {
	if !r.a.decide(stateGranted, nil) {
		return false
	}
	r.a.settle()
	r.a.runCallbacks()
	return true
}

// Reject decides that the call is rejected with err and delivers the
// outcome on the calling goroutine. It reports false if the outcome was
// already decided. It panics if err is nil.
func (r *Resolver) Reject(err error) bool {
	if err == nil {
		panic("bulkhead: Resolver.Reject called with a nil error")
	}
	if !r.a.decide(stateRejected, err) {
		return false
	}
	r.a.settle()
	r.a.runCallbacks()
	return true
}

// Done returns a channel that is closed as soon as the outcome is decided,
// before any callback runs; Err no longer returns ErrPending then.
func (a *Acquisition) Done() <-chan struct{} { return a.cell.Done() }

// Err returns nil if the permit was granted, the rejection error (a
// *FullError for a Semaphore) if it was rejected, ErrCancelled if it was
// withdrawn, and ErrPending while the outcome is not decided yet. It
// reflects a decision at once, before any callback runs.
func (a *Acquisition) Err() error {
	return a.errOf(a.cell.Load())
}

func (a *Acquisition) errOf(s uint32) error {
	if s&knownBit == 0 {
		return ErrPending
	}
	switch s & outcomeMask {
	case stateGranted:
		return nil
	case stateCancelled:
		return ErrCancelled
	default:
		return a.err
	}
}

// Granted reports whether the permit was granted. It is false while pending.
func (a *Acquisition) Granted() bool {
	return a.cell.Load() == stateGranted|knownBit
}

// OnDone registers f to run exactly once with the outcome (the value Err
// returns then). f never runs under a lock of the bulkhead, so it may
// acquire and release permits, block, or call AcquirePermission of the same
// bulkhead: it delays no other waiter (see docs/design.md, "Delivery").
//
// Which goroutine runs f:
//   - if the outcome is already decided, the caller of OnDone, at once;
//   - for a grant by a Semaphore, the goroutine that gave the permit back
//     (ReleasePermission, FinishCall) or grew the limit (ChangeConfig),
//     before that call returns; with weighted calls (SemaphoreCall), a
//     grant that an expiry made possible (a heavy waiter that held lighter
//     ones back expired) runs on the Clock's timer goroutine with the
//     sweep, and one that a Cancel or a newcomer's enqueue made possible
//     on a fresh goroutine, started before that call returns;
//   - for an expiry, the Clock's timer goroutine (testkit.VirtualClock: the
//     caller of Advance); for a LIFO eviction, the caller of
//     AcquirePermissionAsync that evicted it (a fresh goroutine when the
//     newcomer is a blocking AcquirePermission);
//   - for Cancel, the caller of Cancel, before Cancel returns;
//   - for a Resolver's Grant or Reject, its caller; for FromBlocking, the
//     bridge's goroutine.
//
// Exceptions, so that no callback waits for another's and the stack stays
// bounded: when one call grants several waiters (ChangeConfig growing the
// limit, a weighted FinishCall or ReleasePermission giving back k permits,
// a Budget's decision), the first outcome's callbacks run on the deciding
// goroutine and each other outcome's on a fresh goroutine, started before
// that call returns (so the call may return before they have run); the
// outcomes of one expiry sweep run one after the other
// on the timer goroutine, and a fresh goroutine carries on with the rest
// whenever one of them has blocked for a millisecond (so a blocking callback
// delays the others by at most about 2 ms), panics or calls
// runtime.Goexit; and
// when 32 deliveries of one Semaphore are in progress at once (callbacks
// giving permits back inside callbacks, nested or on other goroutines),
// the next one runs on a fresh goroutine, where nesting starts again: a
// chain of callbacks that each give the permit back starts one goroutine
// per 33 grants, and no goroutine nests more than 32 deep in one chain
// (1024 in all). In both cases the deciding call returns only after those
// callbacks have started, so a call that acquires after it never runs
// ahead of them.
//
// Callbacks registered before the outcome was decided start in
// registration order, each once. If one panics, the ones registered after
// it still run, on a fresh goroutine, and the panic goes on on the
// goroutine that ran the panicking callback (unrecovered there, it ends
// the program, as any panic in a goroutine does). The one call still
// half-done when callbacks run, a LIFO AcquirePermissionAsync delivering
// its evictions, withdraws the newcomer it will never return before the
// panic goes on (see AcquirePermissionAsync).
//
// Its fast path (a granted and visible outcome, as every Acquisition
// granted at once has) is inlined at the call site, as the Semaphore's
// are (see takeOr in semaphore.go).
func (a *Acquisition) OnDone(f func(err error)) { grantedOr(a, f, (*Acquisition).onDone) }

// grantedOr runs f(nil) at once if a is granted and visible (no callback
// list to join), and calls slow(a, f) otherwise (or if f is nil, which
// slow refuses). slow is a parameter so that the inliner charges its call
// 17, not 57 (see takeOr).
func grantedOr(a *Acquisition, f func(err error), slow func(*Acquisition, func(error))) {
	if a.cell.Load() == stateGranted|knownBit && f != nil {
		f(nil)
		return
	}
	slow(a, f)
}

// onDone is OnDone once its fast path said no.
func (a *Acquisition) onDone(f func(err error)) {
	if f == nil {
		panic("bulkhead: OnDone called with a nil func")
	}
	if !a.cell.Register(f) {
		f(a.Err())
	}
}

// Cancel withdraws a pending acquisition. It returns true if it won the race
// against a grant or an expiry: no permit is held, the outcome is
// ErrCancelled (visible at once), a CallCancelled event is published and the
// callbacks run on the calling goroutine before Cancel returns. It returns
// false if the outcome was already decided; if that outcome is a grant, the
// caller owns the permit and must give it back.
func (a *Acquisition) Cancel() bool {
	if a.owner == nil { // decided when made (GrantedAcquisition, RejectedAcquisition)
		return false
	}
	return a.owner.cancel(a)
}

// decide is the single atomic decision of the outcome. Only the goroutine
// whose CAS succeeds may write err, and it must then call settle.
func (a *Acquisition) decide(state uint32, err error) bool {
	if !a.cell.CompareAndSwap(statePending, state) {
		return false
	}
	a.err = err
	return true
}

// mustDecide is decide for a waiter queued in a Semaphore, which its
// holder of the Semaphore's lock decides: every decision of a queued
// waiter is taken under that lock (Semaphore.cancel), so the CAS cannot
// lose. It panics if it does: an invariant is broken.
func (a *Acquisition) mustDecide(state uint32, err error) {
	if !a.decide(state, err) {
		panic("bulkhead: a queued waiter was decided outside the Semaphore's lock")
	}
}

// settle makes a decided outcome visible: it sets knownBit and closes Done.
// (A pooled blocking waiter is woken by wakeBlocking instead.)
// It runs no callback and takes only the cell's lock, so a Semaphore calls
// it under its own lock. It is idempotent.
func (a *Acquisition) settle() { a.cell.Publish() }
