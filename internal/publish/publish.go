// Package publish holds the event listeners of one bulkhead (a Semaphore or
// a Pool): a copy-on-write slice behind one atomic pointer, so that
// publishing with no listener costs one load.
package publish

import (
	"sync"
	"sync/atomic"
)

// Listeners is the set of listeners of one bulkhead. The zero value has no
// listener and is ready to use. It is safe for concurrent use.
type Listeners[E any] struct {
	mu   sync.Mutex // serialises Add and remove
	list atomic.Pointer[[]*listener[E]]
}

// listener is one registration; its identity is what remove compares, so
// the same func may be registered twice and removed once.
type listener[E any] struct{ f func(E) }

// Active reports whether any listener is registered. Callers check it
// before they build an event.
func (l *Listeners[E]) Active() bool { return l.list.Load() != nil }

// Add registers f, which must not be nil, and returns a func that
// unregisters it; calling that func again does nothing.
func (l *Listeners[E]) Add(f func(E)) (remove func()) {
	r := &listener[E]{f: f}
	l.mu.Lock()
	var next []*listener[E]
	if cur := l.list.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, r)
	l.list.Store(&next)
	l.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { l.remove(r) }) }
}

func (l *Listeners[E]) remove(r *listener[E]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.list.Load()
	if cur == nil {
		return
	}
	next := make([]*listener[E], 0, len(*cur))
	for _, x := range *cur {
		if x != r {
			next = append(next, x)
		}
	}
	if len(next) == 0 {
		l.list.Store(nil)
		return
	}
	l.list.Store(&next)
}

// Publish calls every listener with e on the calling goroutine, in
// registration order; the caller must hold no lock of the bulkhead. A
// panicking listener is recovered and skipped, so that it can neither
// corrupt the bulkhead nor starve the other listeners.
func (l *Listeners[E]) Publish(e E) {
	ls := l.list.Load()
	if ls == nil {
		return
	}
	for _, r := range *ls {
		call(r.f, e)
	}
}

func call[E any](f func(E), e E) {
	defer func() { _ = recover() }()
	f(e)
}
