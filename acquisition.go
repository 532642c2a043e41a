package bulkhead

import (
	"sync"
	"sync/atomic"
	"time"
)

// Outcome states of an Acquisition. The low byte is the outcome; firedBit is
// set once the outcome has been delivered (Done closed, callbacks run).
const (
	statePending uint32 = iota
	stateGranted
	stateRejected
	stateCancelled

	outcomeMask uint32 = 0xff
	firedBit    uint32 = 1 << 8
)

// owner is what a pending Acquisition is waiting on: a Semaphore's queue, or
// the goroutine of a FromBlocking bridge. withdraw is called by the goroutine
// whose Cancel won the decision, before the callbacks run.
type owner interface {
	withdraw(a *Acquisition)
}

// Acquisition is the future of one permit request. It has three outcomes:
// granted (Err() == nil), rejected (a *FullError, or the error of a custom
// Bulkhead) and withdrawn (ErrCancelled).
//
// The outcome is decided exactly once, by a compare-and-swap on the state
// word: a grant, an expiry and a Cancel race through that single CAS, and
// only the winner acts. When Cancel loses to a grant it returns false and the
// caller owns the permit (it must give it back).
//
// An Acquisition is safe for concurrent use.
type Acquisition struct {
	state atomic.Uint32
	// Fields below are owned by the owner's lock (Semaphore.mu) while the
	// acquisition is queued.
	linked   bool          // in the owner's wait queue
	deadline time.Duration // offset from the owner's epoch
	prev     *Acquisition
	next     *Acquisition

	owner owner
	err   error // written by the deciding goroutine before firedBit is set

	mu   sync.Mutex      // guards done and cb
	done chan struct{}   // created lazily by Done
	cb   func(err error) // callbacks chained in registration order
}

// closedChan is returned by Done for acquisitions that are already done, so
// that the fast path allocates no channel.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// grantedAcquisition is shared by every immediately granted request: it is
// immutable (Cancel fails, callbacks run at once), so it costs no allocation.
var grantedAcquisition = newDone(stateGranted, nil)

func newDone(outcome uint32, err error) *Acquisition {
	a := &Acquisition{err: err}
	a.state.Store(outcome | firedBit)
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

func (f withdrawFunc) withdraw(*Acquisition) {
	if f != nil {
		f()
	}
}

// Resolver decides the outcome of one Acquisition made by
// PendingAcquisition. Its methods are safe for concurrent use with each
// other and with the Acquisition's Cancel: the first decision wins.
type Resolver struct{ a *Acquisition }

// Grant decides that the permit is granted and delivers the outcome: Done
// is closed and the callbacks run on the calling goroutine. It reports
// false if the outcome was already decided (Cancel, Grant or Reject came
// first); the permit was then not handed over, and the caller still owns it
// and must give it back.
func (r *Resolver) Grant() bool {
	if !r.a.decide(stateGranted, nil) {
		return false
	}
	r.a.fire()
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
	r.a.fire()
	return true
}

// Done returns a channel that is closed when the outcome is known and Err no
// longer returns ErrPending.
func (a *Acquisition) Done() <-chan struct{} {
	if a.state.Load()&firedBit != 0 {
		return closedChan
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state.Load()&firedBit != 0 {
		return closedChan
	}
	if a.done == nil {
		a.done = make(chan struct{})
	}
	return a.done
}

// Err returns nil if the permit was granted, the rejection error (a
// *FullError for a Semaphore) if it was rejected, ErrCancelled if it was
// withdrawn, and ErrPending while the outcome is not known yet.
func (a *Acquisition) Err() error {
	return a.errOf(a.state.Load())
}

func (a *Acquisition) errOf(s uint32) error {
	if s&firedBit == 0 {
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
	return a.state.Load() == stateGranted|firedBit
}

// OnDone registers f to run exactly once with the outcome (the value Err
// returns then). If the outcome is already known, f runs at once on the
// calling goroutine. Otherwise f runs on the goroutine that decides the
// outcome: for a grant, the goroutine that gave a permit back (Release,
// FinishCall, ChangeConfig) or one already delivering grants of the same
// bulkhead; for an expiry, the Clock's timer goroutine; for Cancel, the
// caller of Cancel. Callbacks run in registration order and never under a
// lock of the bulkhead, so they may acquire and release permits.
func (a *Acquisition) OnDone(f func(err error)) {
	if f == nil {
		panic("bulkhead: OnDone called with a nil func")
	}
	if s := a.state.Load(); s&firedBit != 0 {
		f(a.errOf(s))
		return
	}
	a.mu.Lock()
	if s := a.state.Load(); s&firedBit != 0 {
		a.mu.Unlock()
		f(a.errOf(s))
		return
	}
	if prev := a.cb; prev != nil {
		a.cb = func(err error) { prev(err); f(err) }
	} else {
		a.cb = f
	}
	a.mu.Unlock()
}

// Cancel withdraws a pending acquisition. It returns true if it won the race
// against a grant or an expiry: no permit is held, the outcome is
// ErrCancelled, a CallCancelled event is published and the callbacks run on
// the calling goroutine. It returns false if the outcome was already decided;
// if that outcome is a grant, the caller owns the permit and must give it back.
func (a *Acquisition) Cancel() bool {
	if !a.decide(stateCancelled, nil) {
		return false
	}
	if a.owner != nil {
		a.owner.withdraw(a)
	}
	a.fire()
	return true
}

// decide is the single atomic decision of the outcome. Only the goroutine
// whose CAS succeeds may write err and must later call fire.
func (a *Acquisition) decide(outcome uint32, err error) bool {
	if !a.state.CompareAndSwap(statePending, outcome) {
		return false
	}
	a.err = err
	return true
}

// fire publishes the decided outcome: sets firedBit, closes Done and runs the
// callbacks on the calling goroutine, outside any lock.
func (a *Acquisition) fire() {
	a.mu.Lock()
	s := a.state.Load() | firedBit
	a.state.Store(s)
	cb := a.cb
	a.cb = nil
	if a.done != nil {
		close(a.done)
	}
	a.mu.Unlock()
	if cb != nil {
		cb(a.errOf(s))
	}
}
