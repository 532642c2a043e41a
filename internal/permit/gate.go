package permit

import (
	"sync/atomic"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// States of a gate. Transitions (each one CAS on gate.state):
//
//	pending  -> granted   the acquisition was granted and no Cancel came first
//	pending  -> rejected  the acquisition was rejected (or Request(n <= 0) while pending)
//	pending  -> cancelled Cancel came first: the acquisition is withdrawn
//	granted  -> active    the source is subscribed and its upstream handle set
//	granted  -> cancelled Cancel while the source is being subscribed
//	active   -> cancelled Cancel after the upstream handle was set
//
// rejected and cancelled are final.
const (
	statePending uint32 = iota
	stateGranted
	stateActive
	stateRejected
	stateCancelled
)

// Handler receives the outcome of a permit acquisition. Exactly one of its
// methods runs, once, unless the subscriber cancels before the outcome is
// known (then neither runs).
//
// The methods run on the goroutine that decided the outcome: the caller of
// Start when the bulkhead answers at once, otherwise the goroutine that
// granted or rejected the acquisition (see bulkhead.Acquisition.OnDone for
// which one), never under a lock and never behind another waiter's handler.
type Handler interface {
	// Granted runs when the permit is held. It (or a goroutine it hands the
	// Guard to) subscribes the source and hands its upstream handle to
	// SetUpstream. g owns the permit: the
	// handler calls g.MarkRan when the call delivers something and
	// g.Complete when the source terminates; Cancel/Dispose call g.Release.
	Granted(g *Guard)
	// Rejected runs when the call is refused before the source was
	// subscribed (a Cancel before that calls neither method): the bulkhead
	// rejected the call (err is the acquisition's
	// error, a *bulkhead.FullError for a Semaphore; a rejection is one even
	// when its error is bulkhead.ErrCancelled), or, for a Subscription,
	// the subscriber requested n <= 0 while pending (err matches
	// ErrNonPositiveRequest). No permit is held.
	Rejected(err error)
}

// canceller is an upstream handle as far as the gate cares.
type canceller interface{ Cancel() }

// cancelFunc adapts a dispose func to canceller (a func value is pointer
// shaped, so the conversion does not allocate).
type cancelFunc func()

func (f cancelFunc) Cancel() { f() }

// gate is the pending-permit state machine shared by Disposable and
// Subscription.
//
// Permit ownership: while pending the bulkhead owns the permit request. The
// goroutine whose CAS pending -> granted succeeds arms guard, which owns the
// permit from then on; the guard is armed before the CAS, so a Cancel that
// follows the CAS always finds it armed. A grant that loses its CAS to
// Cancel gives the permit back with ReleasePermission and never calls
// Granted, so the source is not subscribed.
type gate struct {
	state atomic.Uint32
	acq   atomic.Pointer[bulkhead.Acquisition]
	guard Guard
	h     Handler
	// up is written once by setUpstream before its CAS granted -> active and
	// read only by whoever observes (and leaves) stateActive.
	up canceller
	// Rejected must run after start stored h and after the rejection was
	// decided, which may happen on two goroutines when Request(n <= 0) is
	// called before or during Start: each side adds one to notify, and the
	// side that makes it 2 calls h.Rejected(err). err is written before the
	// rejecting side's Add.
	notify atomic.Uint32
	err    error
}

// start acquires a permit from b and delivers the outcome to h. It must be
// called once, before or after a concurrent cancel.
func (g *gate) start(b bulkhead.Bulkhead, h Handler) {
	if b == nil || h == nil {
		panic("permit: Start needs a non-nil bulkhead and handler")
	}
	g.guard.b = b
	g.h = h
	if g.notify.Add(1) == 2 {
		g.h.Rejected(g.err) // rejected by Request(n <= 0) before Start
		return
	}
	if g.state.Load() != statePending {
		return // cancelled or rejected before we asked: acquire nothing
	}
	a := b.AcquirePermissionAsync()
	g.acq.Store(a)
	if g.state.Load() != statePending {
		// cancel or reject ran before acq was stored and could not
		// withdraw it.
		a.Cancel()
	}
	if err := a.Err(); err != bulkhead.ErrPending {
		g.decided(err) // answered at once: no callback to register
		return
	}
	a.OnDone(g.decided)
}

// decided runs once with the acquisition's outcome, on the goroutine that
// decided it (see bulkhead.Acquisition.OnDone), or in start if the bulkhead
// answered at once.
func (g *gate) decided(err error) {
	switch {
	case err == nil:
		g.guard.hold(g.guard.b)
		if g.state.CompareAndSwap(statePending, stateGranted) {
			g.h.Granted(&g.guard)
			return
		}
		// Cancel won the race after the bulkhead granted: give the permit
		// back unused; the source is never subscribed.
		g.guard.Release()
	default:
		// A rejection, whatever its error: the CAS fails if our own cancel
		// or reject withdrew the acquisition, because both move the gate
		// out of pending before they call Acquisition.Cancel. So an
		// ErrCancelled seen here while still pending is the bulkhead's
		// (RejectedAcquisition(ErrCancelled), a FromBlocking acquire that
		// returned it), and the subscriber gets its one terminal signal.
		if g.state.CompareAndSwap(statePending, stateRejected) {
			g.rejected(err)
		}
	}
}

// setUpstream records the upstream handle once the source is subscribed. It
// returns false, after cancelling up, if the gate is not granted any more
// (cancelled meanwhile) or up is a second upstream.
func (g *gate) setUpstream(up canceller) bool {
	if g.state.Load() != stateGranted {
		up.Cancel()
		return false
	}
	g.up = up
	if g.state.CompareAndSwap(stateGranted, stateActive) {
		return true
	}
	up.Cancel() // cancel won between the load and the CAS
	return false
}

// cancel moves the gate to cancelled and returns the state it left. If that
// was pending it also withdraws the acquisition. The caller finishes the
// other cases: stateActive -> cancel g.up (exactly once; only this caller
// saw that state), then g.guard.Release(); stateGranted -> g.guard.Release()
// (setUpstream will cancel the upstream). Any other state: nothing to do.
func (g *gate) cancel() uint32 {
	for {
		s := g.state.Load()
		switch s {
		case statePending, stateGranted, stateActive:
		default:
			return s
		}
		if !g.state.CompareAndSwap(s, stateCancelled) {
			continue
		}
		if s == statePending {
			// If start has not stored acq yet, it will see cancelled and
			// withdraw it itself. If the bulkhead granted first, decided
			// loses its CAS and gives the permit back.
			if a := g.acq.Load(); a != nil {
				a.Cancel()
			}
		}
		return s
	}
}

// reject moves a pending gate to rejected with err and, if it won, withdraws
// the acquisition (a grant that wins against it gives the permit back) and
// reports err to the handler (now, or from start if it has not run yet).
func (g *gate) reject(err error) bool {
	if !g.state.CompareAndSwap(statePending, stateRejected) {
		return false
	}
	if a := g.acq.Load(); a != nil {
		a.Cancel()
	}
	g.rejected(err)
	return true
}

// rejected is called once by the goroutine whose CAS moved the gate to
// stateRejected.
func (g *gate) rejected(err error) {
	g.err = err
	if g.notify.Add(1) == 2 {
		g.h.Rejected(err)
	}
}
