package adaptive

import (
	"fmt"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// Watch wraps sem like New, but learns from the semaphore's events
// (Semaphore.OnEvent) instead of from its own methods, so that it also
// times the calls of code that holds the *Semaphore itself: bulkheadhttp's
// Transport, contrib/grpc, any integration built on a *bulkhead.Registry.
// CallPermitted counts a grant, CallFinished a finish, CallRejected a
// rejection. A CallFinished that carries the call's duration
// (Event.CallDuration: the call finished with FinishCallStarted, as a
// Lease, the reactive operators and Call.Finish do) gives its exact RTT; one
// without it (Semaphore.FinishCall) is matched with the oldest grant, as for
// the plain methods, and its window's Sample is Matched.
//
// The Bulkhead's own methods work too (they only delegate, the events do
// the counting), with one difference from New: a permit given back on the
// semaphore with ReleasePermission publishes no event (nor does the release
// Semaphore.AcquirePermission makes when its context ends as the permit is
// granted), so the controller counts it in flight until the end of a
// window, where it compares its count with Semaphore.Metrics; an excess
// seen at two window ends in a row is dropped (the newest grants).
// Turning events on costs every call of sem a clock read per event (see
// Semaphore.OnEvent). Stop unsubscribes.
func Watch(sem *bulkhead.Semaphore, cfg Config, opts ...Option) (*Bulkhead, error) {
	b, err := newWatched(sem, cfg, opts)
	if err != nil {
		return nil, err
	}
	b.stop = sem.OnEvent(b.onEvent)
	b.apply()
	return b, nil
}

// newWatched is newBulkhead for a watching controller whose events are fed
// by the caller; calls already in flight are counted as granted now.
func newWatched(sem *bulkhead.Semaphore, cfg Config, opts []Option) (*Bulkhead, error) {
	b, err := newBulkhead(sem, cfg, opts)
	if err != nil {
		return nil, err
	}
	b.watchFrom()
	return b, nil
}

// watchFrom makes b a watching controller, before any event reaches it:
// the calls in flight on its semaphore are counted as granted now.
func (b *Bulkhead) watchFrom() {
	b.watched = true
	now := b.now()
	for range b.sem.Metrics().InFlightCalls {
		b.inFlight++
		b.plain.push(now, b.inFlight)
	}
	b.w.maxInFlight = b.inFlight
}

// Stop ends a Watch: the controller hears no more events and the limit
// stays where it is. It does nothing for a Bulkhead made by New, and is
// idempotent.
func (b *Bulkhead) Stop() {
	if b.stop != nil {
		b.stop()
	}
}

// onEvent is the semaphore listener of a watching controller. It runs on
// the goroutine that caused the event, outside the semaphore's lock.
func (b *Bulkhead) onEvent(e bulkhead.Event) {
	switch e.Type {
	case bulkhead.CallPermitted:
		b.granted(true)
	case bulkhead.CallFinished:
		record := finishPlain
		if d := e.CallDuration; d > 0 {
			record = func(b *Bulkhead, now time.Duration) { finishTimed(b, now, d) }
		}
		var changed bool
		defer func() {
			if changed {
				b.apply()
			}
		}()
		b.returned(record, nil, &changed)
	case bulkhead.CallRejected:
		b.countRejected()
	}
}

// finishTimed records the RTT d that a watched call's CallFinished event
// measured (exact, not matched) and the level of the grant nearest to its
// start, now − d, which it takes (see grants).
func finishTimed(b *Bulkhead, now, d time.Duration) {
	if g, ok := b.plain.take(now - d); ok {
		b.w.add(d)
		b.w.callInFlight = g.level
	}
}

// reconcileLocked drops the permits counted but no longer held (given back
// with ReleasePermission on the semaphore, which publishes no event) when
// the excess persisted since the last window: a finish whose event is still
// on its way also looks like an excess, for a moment. Reading the
// semaphore's metrics under mu is safe: the semaphore never calls the
// controller while holding its own lock (listeners run outside it).
func (b *Bulkhead) reconcileLocked() {
	excess := b.inFlight - b.sem.Metrics().InFlightCalls
	drop := min(max(excess, 0), b.excess)
	b.excess = max(excess-drop, 0)
	for range drop {
		b.plain.popNewest()
		b.inFlight--
	}
}

// WatchRegistry is NewRegistry with a watching controller (see Watch) per
// semaphore of reg: one registry listener (Registry.OnEvent) feeds them
// all, so the semaphores created later are watched from their creation.
// A partner's controller is created at its first event or Get. Stop
// unsubscribes.
func WatchRegistry(reg *bulkhead.Registry, cfg Config, opts ...Option) (*Registry, error) {
	r, err := NewRegistry(reg, cfg, opts...)
	if err != nil {
		return nil, err
	}
	r.watched = true
	r.stop = reg.OnEvent(r.onEvent)
	return r, nil
}

// Stop ends a WatchRegistry: no controller hears events any more. It does
// nothing for a Registry made by NewRegistry, and is idempotent.
func (r *Registry) Stop() {
	if r.stop != nil {
		r.stop()
	}
}

// onEvent dispatches an event to its partner's controller, creating the
// controller on the partner's first event. The state that the event reports
// is already in the semaphore's metrics, from which a new controller
// starts, so the event that creates it only counts if it is a rejection.
func (r *Registry) onEvent(e bulkhead.Event) {
	sem, ok := r.reg.Find(e.Name)
	if !ok {
		return // removed meanwhile
	}
	b, created, err := r.getFor(sem)
	if err != nil {
		return // not adaptive (OnlyConfigured); the config was validated by WatchRegistry
	}
	if created && e.Type != bulkhead.CallRejected {
		return
	}
	b.onEvent(e)
}

// getFor returns the controller of sem, creating it if needed. The initial
// limit is applied after r.mu is released: ChangeConfig publishes events,
// which come back to onEvent and getFor.
func (r *Registry) getFor(sem *bulkhead.Semaphore) (b *Bulkhead, created bool, err error) {
	r.mu.Lock()
	if b, ok := r.items[sem.Name()]; ok && b.sem == sem {
		r.mu.Unlock()
		return b, false, nil
	}
	if r.onlyConfigured {
		r.mu.Unlock()
		return nil, false, fmt.Errorf("%w: %q", ErrNotAdaptive, sem.Name())
	}
	if r.watched {
		b, err = newWatched(sem, r.cfg, r.opts)
	} else {
		b, err = newBulkhead(sem, r.cfg, r.opts)
	}
	if err == nil {
		r.items[sem.Name()] = b
	}
	r.mu.Unlock()
	if err != nil {
		return nil, false, err
	}
	b.apply()
	return b, true, nil
}
