package bulkhead

import (
	"fmt"
	"time"

	"github.com/rxbulkhead/bulkhead/internal/callstart"
)

// How a call's duration (Event.CallDuration) is measured with no clock
// read beyond those stamping events, no allocation per call, and nothing at
// all while no listener is registered:
//
//   - Every CallPermitted a Semaphore publishes (only when a listener is
//     registered) makes its Time the Semaphore's latest grant stamp
//     (publisher.publish, stamps.stamp): an offset from the Time of the
//     first stamped event, in one atomic word that a CAS only lets grow.
//   - StartCall, called by the code that holds a granted permit, returns
//     that stamp. A grant's CallPermitted is published before the code it
//     admits runs (by the granting call itself on the synchronous paths, by
//     the deciding goroutine before it runs the Acquisition's callbacks,
//     by a blocking waiter before AcquirePermission returns), so the stamp
//     lies between the call's own grant and the StartCall: the grant's, or
//     a later grant's of another call. Two atomic loads.
//   - FinishCallStarted hands that stamp down the release path to the
//     CallFinished event (publishFinished), whose clock reading ends the
//     call.
//
// So CallDuration is the time from the grant to the finish, short by at
// most the time between the grant and StartCall: nothing when StartCall
// follows the grant, as it does in the Lease, the operators and adaptive
// Calls. A listener registered after a call's grant resets the stamp
// (publisher.add), so that call reports zero rather than a start from
// before its grant.

// CallStart is the start of a call that holds a permit of a Semaphore, for
// the CallDuration of its CallFinished event: take it with StartCall once
// the permit is granted, and give it back with FinishCallStarted. The zero
// CallStart is an unknown start (StartCall returns it while no listener is
// registered), which FinishCallStarted treats as FinishCall does. A
// CallStart is a small value (two words), comparable, with no exported
// fields, that means something only to the Bulkhead that returned it:
// FinishCallStarted of another Semaphore refuses it. (It is an alias of a
// type internal to this module, so that adaptive.Bulkhead, which wraps a
// Semaphore, can return starts of its own.)
type CallStart = callstart.Start

// CallTimer is a Bulkhead whose CallFinished events can carry the call's
// duration (Event.CallDuration): *Semaphore implements it, and so does
// adaptive.Bulkhead. The reactive operators use it when the Bulkhead they
// are given implements it; an implementation that does not reports its
// calls without a duration.
type CallTimer interface {
	// StartCall returns the start of a call whose permit was just
	// granted.
	StartCall() CallStart
	// FinishCallStarted is FinishCall for the call that started at start.
	FinishCallStarted(start CallStart)
}

// StartCall returns the start of a call whose permit was just granted, for
// FinishCallStarted: the time of the Semaphore's latest grant, which is
// this call's grant when StartCall follows it, as in
//
//	if s.TryAcquirePermission() {
//		start := s.StartCall()
//		defer s.FinishCallStarted(start)
//		...
//	}
//
// It reads no clock: while no listener is registered (OnEvent) it costs one
// atomic load and returns the zero CallStart; with one, two atomic loads.
// Take it right after the grant: taken later, it may return the grant of a
// call admitted since, which shortens the duration reported.
func (s *Semaphore) StartCall() CallStart {
	if !s.events.active() {
		return CallStart{}
	}
	at := s.events.last.Load()
	if at == 0 {
		return CallStart{}
	}
	return callstart.Make(s.events.epoch.Load(), at) // set before any stamp
}

// FinishCallStarted gives back the permit of a call that ran, as
// FinishCall does, and its CallFinished event carries the call's duration,
// from start (StartCall) to now on the Semaphore's Clock. With the zero
// CallStart it is FinishCall. It panics, naming the bulkhead, if more
// permits are released than were acquired (so also when one call's start
// is given back twice and no other call holds a permit), and, once the
// permit is given back and CallFinished published without a duration, if
// start was returned by another Semaphore.
func (s *Semaphore) FinishCallStarted(start CallStart) {
	s.release(true, start)
	if ep := callstart.Epoch(start); ep != nil && ep != s.events.epoch.Load() {
		panic(fmt.Sprintf("bulkhead %q: FinishCallStarted given the CallStart of another bulkhead", s.name))
	}
}

// publishFinished publishes the CallFinished of a call that started at
// start (the zero CallStart: unknown). A listener must be registered.
func (s *Semaphore) publishFinished(start CallStart) {
	now := s.clock.Now()
	s.events.publish(Event{Type: CallFinished, Name: s.name, Time: now, CallDuration: s.events.since(start, now)})
}

// stamp makes t, the Time of a CallPermitted being published, the latest
// grant stamp unless a later one is already there.
func (st *stamps) stamp(t time.Time) {
	ep := st.epoch.Load()
	if ep == nil {
		ep = st.setEpoch(t)
	}
	v := callstart.Offset(t, *ep)
	for old := st.last.Load(); v > old; old = st.last.Load() {
		if st.last.CompareAndSwap(old, v) {
			return
		}
	}
}

// setEpoch makes t the epoch of the stamps unless another goroutine set
// one first, and returns the epoch. It runs once per Semaphore (the first
// grant published to a listener), and is apart from stamp so that only it
// moves a time.Time to the heap.
func (st *stamps) setEpoch(t time.Time) *time.Time {
	st.epoch.CompareAndSwap(nil, &t)
	return st.epoch.Load()
}

// since returns the time from start to now: zero for the zero CallStart
// and for one of another Semaphore (whose epoch is not these stamps'), and
// never negative.
func (st *stamps) since(start CallStart, now time.Time) time.Duration {
	if callstart.Epoch(start) != st.epoch.Load() {
		return 0
	}
	return callstart.Since(start, now)
}

// StartCall takes the start of l's call now (Semaphore.StartCall), for
// the CallDuration that FinishCall reports. The Lease of AcquirePermission,
// TryAcquirePermission, and of an AcquirePermissionAsync granted at once,
// has it already; that of a queued AcquirePermissionAsync takes it here,
// once granted (in its OnDone callback, say). Calling it again takes a
// later start. It panics on a Lease that holds no permit, as FinishCall
// does.
func (l *Lease) StartCall() {
	if l.e == nil || l.a != nil && !l.a.Granted() {
		l.misuse("StartCall")
	}
	l.start = l.e.Item().StartCall()
}
