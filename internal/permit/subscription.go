package permit

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// ErrNonPositiveRequest is the errors.Is target of the error a subscriber
// gets when it requests n <= 0, violating Reactive Streams rule 3.9.
var ErrNonPositiveRequest = errors.New("reactive streams rule 3.9 violated: Request(n) needs n > 0")

// NonPositiveRequestError returns the error reported for Request(n), n <= 0;
// its message quotes n and rule 3.9 and it matches ErrNonPositiveRequest.
func NonPositiveRequestError(n int64) error {
	return fmt.Errorf("%w, got Request(%d)", ErrNonPositiveRequest, n)
}

// Upstream is the subscription of the source a Subscription forwards to
// (flowable.Subscription satisfies it).
type Upstream interface {
	Request(n int64)
	Cancel()
}

// Subscription is the PermissionAwaitingSubscription of Flowable: the
// subscription a downstream subscriber holds from the moment the permit is
// requested. It is the state machine of Disposable (same gate, same
// ownership rules) plus demand.
//
// Demand: Request calls made before the upstream is set are summed in one
// atomic word (saturating at math.MaxInt64, rule 3.17) and replayed as one
// Request when SetUpstream connects the source; later calls are forwarded.
// Requests to the upstream (the replay, later requests) go through one drain
// loop guarded by an atomic work-in-progress counter, so they never overlap
// even when the grant arrives on another goroutine than the subscriber's,
// and no goroutine is ever parked or started. Cancel reaches the upstream
// directly, exactly once (see Cancel).
//
// Cancel while pending withdraws the acquisition. Cancel racing SetUpstream
// cancels the upstream exactly once. The permit is given back through the
// Guard passed to Handler.Granted.
//
// The zero Subscription is ready: Request and Cancel may be called before
// Start (typically from the subscriber's OnSubscribe). Embed it in the
// operator's subscriber to save an allocation; do not copy it after use.
type Subscription struct {
	g  gate
	up Upstream // written by SetUpstream before the gate becomes active

	requested atomic.Int64 // demand not yet forwarded
	// bad holds n-1 (wrapping) of a Request(n <= 0) not yet forwarded, so
	// that 0 means none.
	bad atomic.Int64
	wip atomic.Int64 // drain loop: work in progress
}

// Start requests a permit from b and reports the outcome to h (see Handler).
// It never blocks. If Cancel was called before, it requests nothing; if
// Request(n <= 0) was called before, it calls h.Rejected at once. Start must
// be called once; it panics if b or h is nil.
func (s *Subscription) Start(b bulkhead.Bulkhead, h Handler) { s.g.start(b, h) }

// SetUpstream connects the source's subscription; the Handler calls it from
// the source's OnSubscribe, at most once. It replays the demand buffered so
// far in one Request.
//
// If the upstream panics inside a Request made by the Subscription (a
// synchronous source whose subscriber panicked in OnNext), the Subscription
// cancels itself as Cancel would, so the permit is given back, and lets the
// panic go on. It returns false, after cancelling up, if the
// Subscription was cancelled meanwhile (or up is a second upstream: rule
// 2.5).
func (s *Subscription) SetUpstream(up Upstream) bool {
	if up == nil {
		panic("permit: SetUpstream called with a nil Upstream (rule 2.13)")
	}
	if s.g.state.Load() == stateGranted {
		s.up = up // the gate's CAS below publishes it to the drain loop
	}
	if !s.g.setUpstream(up) {
		return false
	}
	s.drain()
	return true
}

// Request adds n to the demand: buffered while pending, forwarded once the
// upstream is set. n <= 0 violates rule 3.9: while pending, the acquisition
// is withdrawn and Handler.Rejected gets an error matching
// ErrNonPositiveRequest; once granted, Request(n) is forwarded so that the
// source signals OnError itself, serially with its other signals. After
// Cancel or a rejection, Request does nothing.
func (s *Subscription) Request(n int64) {
	if n <= 0 {
		if s.g.reject(NonPositiveRequestError(n)) {
			return
		}
		s.bad.CompareAndSwap(0, n-1)
	} else {
		for {
			r := s.requested.Load()
			nr := r + n
			if nr < 0 {
				nr = math.MaxInt64
			}
			if s.requested.CompareAndSwap(r, nr) {
				break
			}
		}
	}
	s.drain()
}

// Cancel ends the subscription; it is idempotent. Pending: the acquisition
// is withdrawn (no permit consumed, source never subscribed, no Handler
// call). Granted: the upstream is cancelled exactly once (now, or by
// SetUpstream) and the permit given back per the Guard's rules (FinishCall
// if the call ran, ReleasePermission otherwise).
//
// The upstream's Cancel is called directly by the goroutine whose CAS moved
// the gate out of stateActive, not through the drain loop: a subscriber that
// cancels inside OnNext runs inside the drain loop's Request to a
// synchronous source, and that source must see the cancellation before it
// emits the next element (rule 3.5 makes Cancel safe to call concurrently
// with Request; rule 3.3 allows it re-entrantly). The drain loop forwards
// nothing once the gate has left stateActive.
func (s *Subscription) Cancel() {
	switch s.g.cancel() {
	case stateActive:
		s.up.Cancel()
		s.g.guard.Release()
	case stateGranted:
		s.g.guard.Release()
	}
}

// Cancelled reports whether Cancel was called before the subscription was
// rejected.
func (s *Subscription) Cancelled() bool { return s.g.state.Load() == stateCancelled }

// abandon runs when a panic unwinds through the drain loop: the upstream
// panicked inside Request, typically a synchronous source whose subscriber
// panicked in OnNext. The Subscription is cancelled as by Cancel (upstream
// cancelled once, permit given back through the Guard) and the loop
// unlocked, then the panic goes on.
func (s *Subscription) abandon() {
	s.Cancel()
	s.wip.Store(0)
}

// drain forwards buffered demand and bad requests to the upstream while the
// gate is active. Only the goroutine that moves wip from 0 runs the loop; others
// leave their work in the atomic words and the owner picks it up before it
// lets go (missed counts the passes it still owes).
func (s *Subscription) drain() {
	if s.wip.Add(1) != 1 {
		return
	}
	finished := false
	defer func() {
		if !finished {
			s.abandon()
		}
	}()
	missed := int64(1)
	for {
		if s.g.state.Load() == stateActive {
			if r := s.requested.Swap(0); r != 0 {
				s.up.Request(r)
			}
			if b := s.bad.Swap(0); b != 0 {
				s.up.Request(b + 1)
			}
		}
		missed = s.wip.Add(-missed)
		if missed == 0 {
			finished = true
			return
		}
	}
}
