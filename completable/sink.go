package completable

import "sync"

// sink is the Observer of the bridges (ToObservable, Await): it hands the
// terminal signal to the goroutine that waits on done, and lets that
// goroutine dispose the subscription, even before OnSubscribe arrived.
type sink struct {
	done chan error // one slot: the first terminal signal

	mu       sync.Mutex
	d        Disposable
	disposed bool // dispose was called; a Disposable arriving later is disposed
}

func newSink() *sink { return &sink{done: make(chan error, 1)} }

// OnSubscribe keeps d, or disposes it if dispose came first or if it is a
// second Disposable.
func (s *sink) OnSubscribe(d Disposable) {
	s.mu.Lock()
	keep := s.d == nil && !s.disposed
	if keep {
		s.d = d
	}
	s.mu.Unlock()
	if !keep {
		d.Dispose()
	}
}

func (s *sink) OnComplete()       { s.terminate(nil) }
func (s *sink) OnError(err error) { s.terminate(err) }

// terminate keeps the first terminal signal; a misbehaving source's second
// one is dropped rather than blocking it.
func (s *sink) terminate(err error) {
	select {
	case s.done <- err:
	default:
	}
}

// dispose disposes the subscription now, or when its Disposable arrives.
// The Disposable is called outside the lock.
func (s *sink) dispose() {
	s.mu.Lock()
	s.disposed = true
	d := s.d
	s.mu.Unlock()
	if d != nil {
		d.Dispose()
	}
}
