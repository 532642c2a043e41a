// Package fanout keeps the listeners of a registry of bulkheads that each
// publish their own events: a listener registered on the registry is
// subscribed to every item, present and future, and told of every item
// evicted. package pool's Registry uses it for its MetricsSource.
package fanout

import (
	"slices"
	"sync"
)

// Item is a bulkhead with listeners of its own.
type Item[E any] interface {
	comparable
	OnEvent(f func(E)) (remove func())
}

// Set is the registry-wide listeners of the items of a registry. The
// registry's lock (mu) guards the Set and the set of items: the registry
// calls AddedLocked, RemovedLocked and EvictedLocked under it, so a new
// item is subscribed before anyone can use it and a listener registered
// concurrently is subscribed exactly once to every item. The zero Set is
// not usable: call New.
type Set[I Item[E], E any] struct {
	mu    sync.Locker
	items func() []I // the live items, called under mu

	events []*eventListener[I, E]
	evicts []*evictListener
}

type eventListener[I comparable, E any] struct {
	f    func(E)
	subs map[I]func()
}

type evictListener struct{ f func(name string) }

// New returns the Set of a registry whose lock is mu and whose live items
// items returns (under mu).
func New[I Item[E], E any](mu sync.Locker, items func() []I) *Set[I, E] {
	return &Set[I, E]{mu: mu, items: items}
}

// OnEvent subscribes f to every item, present and future, and returns a
// func that unsubscribes it everywhere (idempotent). f must not be nil.
func (s *Set[I, E]) OnEvent(f func(E)) (remove func()) {
	l := &eventListener[I, E]{f: f, subs: map[I]func(){}}
	s.mu.Lock()
	for _, it := range s.items() {
		l.subs[it] = it.OnEvent(f)
	}
	s.events = append(s.events, l)
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.events = slices.DeleteFunc(s.events, func(x *eventListener[I, E]) bool { return x == l })
			subs := l.subs
			l.subs = nil
			s.mu.Unlock()
			for _, unsubscribe := range subs {
				unsubscribe()
			}
		})
	}
}

// OnEvict registers f to be called with the name of every item evicted,
// and returns a func that unregisters it (idempotent). f runs under the
// registry's lock; a panic in f is recovered and ignored, and the
// listeners after one that calls runtime.Goexit are still told
// (EvictedLocked). f must not be nil.
func (s *Set[I, E]) OnEvict(f func(name string)) (remove func()) {
	l := &evictListener{f: f}
	s.mu.Lock()
	s.evicts = append(s.evicts, l)
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.evicts = slices.DeleteFunc(s.evicts, func(x *evictListener) bool { return x == l })
			s.mu.Unlock()
		})
	}
}

// AddedLocked subscribes the listeners to it, a new item not yet handed to
// anyone.
func (s *Set[I, E]) AddedLocked(it I) {
	for _, l := range s.events {
		l.subs[it] = it.OnEvent(l.f)
	}
}

// RemovedLocked unsubscribes the listeners from it, an item the registry
// no longer holds.
func (s *Set[I, E]) RemovedLocked(it I) {
	for _, l := range s.events {
		if unsubscribe, ok := l.subs[it]; ok {
			delete(l.subs, it)
			unsubscribe()
		}
	}
}

// EvictedLocked is RemovedLocked for an item evicted as idle, then tells
// the OnEvict listeners its name. A panicking listener is recovered and
// ignored. One that calls runtime.Goexit ends the calling goroutine, but
// the listeners after it are told first (the registry's own, an
// exporter's that forgets the name's series, must not miss an eviction
// because a user's listener came before it).
func (s *Set[I, E]) EvictedLocked(name string, it I) {
	s.RemovedLocked(it)
	tellEvicted(s.evicts, name)
}

func tellEvicted(ls []*evictListener, name string) {
	for i, l := range ls {
		func() {
			returned := false
			defer func() {
				if recover() == nil && !returned { // runtime.Goexit
					tellEvicted(ls[i+1:], name)
				}
			}()
			l.f(name)
			returned = true
		}()
	}
}
