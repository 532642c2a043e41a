package completable

import (
	"sync/atomic"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/nilcheck"
	"github.com/rxbulkhead/bulkhead/internal/permit"
)

// Bulkhead returns a Completable that subscribes to src only while it holds
// a permit of b. Each subscription acquires its own permit (subscribing
// again acquires again) and gives it back exactly once.
//
// Subscribe never blocks and never parks a goroutine. The observer first
// receives (OnSubscribe) a Disposable that stands for the subscription while
// the permit is pending, then:
//   - granted at once: src is subscribed on the calling goroutine;
//   - granted later: src is subscribed on the goroutine that delivers the
//     grant (typically the one that gave a permit back), so src.Subscribe
//     must not block; FromFunc and FromObservable run their call on a
//     goroutine of their own;
//   - rejected (no wait, queue full, wait timeout, evicted): OnError with
//     the *bulkhead.FullError (errors.Is(err, bulkhead.ErrBulkheadFull)),
//     and src is never subscribed.
//
// Dispose while the permit is pending withdraws the acquisition: no permit
// is consumed and src is never subscribed, even if the grant races with
// Dispose (a permit granted concurrently is given back with
// b.ReleasePermission).
//
// The permit goes back with b.FinishCall when src completes or fails,
// before the observer is signalled (so an observer that subscribes again
// finds it free), and with b.ReleasePermission when the observer disposes
// after src was subscribed and before it terminated; src is then disposed.
// That permit goes back at Dispose, not when src stops: a call that does not
// stop at once (a FromFunc func that has yet to see its context end) runs on
// without a permit, and a waiting subscription may be granted meanwhile.
// A terminal signal and Dispose race through one CAS: the observer gets no
// signal once Dispose has won. Signals to the observer are serial.
//
// Bulkhead panics if b or src is nil; Subscribe panics if its observer is
// nil.
func Bulkhead(b bulkhead.Bulkhead, src Completable) Completable {
	if nilcheck.Is(b) {
		panic("completable: Bulkhead called with a nil bulkhead.Bulkhead")
	}
	if src == nil {
		panic("completable: Bulkhead called with a nil Completable")
	}
	return &bulkheadCompletable{b: b, src: src}
}

type bulkheadCompletable struct {
	b   bulkhead.Bulkhead
	src Completable
}

// Subscribe hands o the waiting Disposable, then requests the permit, so
// that OnSubscribe precedes every other signal whichever goroutine delivers
// the outcome.
func (c *bulkheadCompletable) Subscribe(o Observer) {
	if o == nil {
		panic(nilObserver)
	}
	s := &bulkheadObserver{down: o, src: c.src}
	o.OnSubscribe(s)
	s.Start(c.b, s)
}

// bulkheadObserver is, at once, the Disposable the downstream holds (the
// embedded permit.Disposable: a PermissionAwaitingDisposable), the
// permit.Handler that learns the outcome of the acquisition, and the
// Observer of src.
//
// Permit ownership: the permit.Disposable owns the request while it is
// pending; from the grant on, the permit.Guard owns the permit and gives it
// back once: Complete on src's terminal signal, Release (ReleasePermission:
// a Completable delivers nothing before its end, so the guard is never
// marked as run) on Dispose.
//
// Signals to down: OnSubscribe before Start; then at most one terminal
// signal, from Rejected (only when the gate's CAS rejected the acquisition,
// so src is never subscribed) or from src (subscribed only after the grant
// won that CAS). state decides, with one CAS, between that terminal signal
// and the downstream's Dispose.
type bulkheadObserver struct {
	permit.Disposable
	down  Observer
	src   Completable
	guard *permit.Guard // set by Granted before src is subscribed
	state atomic.Uint32 // live -> terminated | disposed
}

// Dispose ends the subscription unless it terminated first: a pending
// acquisition is withdrawn; after the grant, src is disposed and the permit
// released.
func (s *bulkheadObserver) Dispose() {
	if s.state.CompareAndSwap(live, disposed) {
		s.Disposable.Dispose()
	}
}

// IsDisposed reports whether Dispose won against the terminal signal.
func (s *bulkheadObserver) IsDisposed() bool { return s.state.Load() == disposed }

// Granted runs on the goroutine that decided the grant and subscribes src.
// If src.Subscribe panics, the subscription is disposed so that the permit
// goes back, and the panic goes on.
func (s *bulkheadObserver) Granted(g *permit.Guard) {
	s.guard = g
	ok := false
	defer func() {
		if !ok {
			s.Dispose()
		}
	}()
	s.src.Subscribe(s)
	ok = true
}

// Rejected runs when src will never be subscribed.
func (s *bulkheadObserver) Rejected(err error) {
	if s.state.CompareAndSwap(live, terminated) {
		s.down.OnError(err)
	}
}

// OnSubscribe connects src's Disposable: Dispose from now on disposes it,
// and if the subscription was disposed meanwhile it is disposed at once. A
// second Disposable is disposed at once.
func (s *bulkheadObserver) OnSubscribe(up Disposable) {
	if up == nil {
		panic("completable: the source called OnSubscribe with a nil Disposable")
	}
	s.SetUpstream(up.Dispose)
}

// OnComplete gives the permit back, then completes down, unless Dispose won.
func (s *bulkheadObserver) OnComplete() {
	if s.state.CompareAndSwap(live, terminated) {
		s.guard.Complete()
		s.down.OnComplete()
	}
}

// OnError gives the permit back (FinishCall: the call ran), then passes err
// on, unless Dispose won.
func (s *bulkheadObserver) OnError(err error) {
	if s.state.CompareAndSwap(live, terminated) {
		s.guard.Complete()
		s.down.OnError(err)
	}
}

var (
	_ Disposable     = (*bulkheadObserver)(nil)
	_ Observer       = (*bulkheadObserver)(nil)
	_ permit.Handler = (*bulkheadObserver)(nil)
)
