package bulkhead

import (
	"math"
	"time"
)

// How a queued call's wait is measured (Event.Wait) without a field of its
// own in the 96-byte Acquisition:
//
//   - While queued, Acquisition.deadline holds the deadline, an offset from
//     the wait state's epoch. A wait without a deadline (NoTimeout) stores
//     noDeadline plus its enqueue offset when a listener was registered at
//     enqueue time, math.MaxInt64 (enqueue time unknown) otherwise: either
//     is at or beyond noDeadline, which no bounded deadline reaches before
//     146 years of uptime, so the queue treats both as "no deadline". A
//     bounded wait so long that its deadline would reach them (or
//     unstampedDeadline) is stored as an open wait queued with a listener
//     (boundedDeadline): it arms no timer, as before, and its enqueue
//     offset stays known.
//   - When the call is decided (waitState.settled, under mu, after unlink),
//     the deciding goroutine rewrites deadline to the enqueue offset
//     (enqueuedAtLocked), or to unknownEnqueue. Nobody reads the deadline of
//     a decided call; the goroutine that publishes its event (the decider,
//     or a blocking waiter's own goroutine after its wake-up, which the
//     send orders after settled) reads the offset.
//   - A blocking wait queued unstamped (stamp.go) reports the wait from
//     its stamp, up to stampDelay short, or 0 if decided unstamped (queued
//     unstamped only while no listener is registered).
//   - A bounded wait's enqueue offset is deadline - MaxWaitDuration, with
//     the MaxWaitDuration of the latest enqueue with a bounded wait
//     (waitState.lastWait; an enqueue with NoTimeout leaves it alone): if
//     ChangeConfig changed MaxWaitDuration to another bounded wait while
//     the call waited and a call was queued with the new one, the wait it
//     reports is off by the change (clamped to be at least zero).
const (
	noDeadline     time.Duration = 1 << 62
	unknownEnqueue time.Duration = -1
)

// boundedDeadline returns the deadline field of a call queued at the
// offset now with the bounded wait wait: now + wait, unless that reaches
// unstampedDeadline (146 years after the epoch, or a wait near NoTimeout),
// which the queue and enqueuedAtLocked would read as an unstamped or open
// wait (math.MaxInt64, the saturated sum, as one queued without a
// listener: a Wait of zero); such a call is stored as an open wait queued
// at now (noDeadline + now), which keeps its enqueue offset.
func boundedDeadline(now, wait time.Duration) time.Duration {
	if wait >= unstampedDeadline-now {
		return noDeadline + now
	}
	return now + wait
}

// openDeadlineLocked returns the deadline field of a call queued now
// without a deadline (NoTimeout), encoded as above.
func (s *Semaphore) openDeadlineLocked() time.Duration {
	if !s.events.active() {
		return math.MaxInt64
	}
	return noDeadline + s.sinceEpochLocked()
}

// enqueuedAtLocked returns the enqueue offset of a, just decided and
// unlinked, from its deadline field (see above).
func (w *waitState) enqueuedAtLocked(a *Acquisition) time.Duration {
	switch d := a.deadline; {
	case d == math.MaxInt64, d == unstampedDeadline:
		return unknownEnqueue
	case d >= noDeadline:
		return d - noDeadline
	default:
		return max(d-w.lastWait, 0)
	}
}

// publishWaited publishes an event of a call that was queued at the
// enqueue offset enq (unknownEnqueue: Wait is zero), measuring its wait on
// the clock reading that stamps the event.
func (s *Semaphore) publishWaited(t EventType, r Reason, enq time.Duration) {
	if !s.events.active() {
		return
	}
	now := s.clock.Now()
	var wait time.Duration
	if enq != unknownEnqueue {
		wait = max(now.Sub(s.wait.epoch)-enq, 0)
	}
	s.events.publish(Event{Type: t, Name: s.name, Time: now, Reason: r, Wait: wait})
}
