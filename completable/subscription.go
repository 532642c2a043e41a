package completable

import "sync/atomic"

// States of a subscription.
const (
	live uint32 = iota
	terminated
	disposed
)

// subscription is the Disposable of the sources in this package. One CAS on
// state decides between the source's terminal signal and Dispose: the
// winner alone acts, so the observer gets no signal once Dispose has won,
// and Dispose after a terminal signal does nothing.
type subscription struct {
	state  atomic.Uint32
	cancel func() // stops the running call; nil for synchronous sources
}

// Dispose ends the subscription if it has not terminated, cancelling the
// running call.
func (s *subscription) Dispose() {
	if s.state.CompareAndSwap(live, disposed) && s.cancel != nil {
		s.cancel()
	}
}

// IsDisposed reports whether Dispose won against the terminal signal.
func (s *subscription) IsDisposed() bool { return s.state.Load() == disposed }

// finish signals err (nil: completion) to o unless Dispose came first. It is
// called once, by the goroutine that runs the call.
func (s *subscription) finish(o Observer, err error) {
	if !s.state.CompareAndSwap(live, terminated) {
		return
	}
	if err != nil {
		o.OnError(err)
	} else {
		o.OnComplete()
	}
}
