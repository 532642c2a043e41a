package bulkhead

import (
	"slices"
	"time"
)

// Coarse deadlines. A queued call's deadline is the clock at its enqueue
// plus MaxWaitDuration, and reading the clock is most of what a bounded
// wait costs over an unbounded one on a contended bulkhead (the clock read
// inside mu; the timer's cost to the scheduler is the other part, paid by
// any process with a timer pending). So a blocking AcquirePermission that
// joins a non-empty queue with a wait of coarseMinWait or more, with the
// default clock and no event listener, reads no clock: it is queued
// unstamped, and the next clock reading taken under mu stamps it with that
// reading plus its wait. That is never earlier than its true deadline, and
// at most stampDelay later: the call that last read the clock for such a
// waiter made sure the timer fires by then (and every sweep reads the
// clock). So such a wait ends never early and at most 1 ms (0.1 % of a
// 1 s wait) late, plus the timer's own lateness, as any wait has.
//
// Invariants, all under mu:
//   - the unstamped waiters are a suffix of the queue, from w.unstamped
//     (nil: none) to the tail; their deadline field holds unstampedDeadline
//     and their wait is w.lastWait (any enqueue with another wait reads the
//     clock, which stamps them first, and ChangeConfig stamps them before
//     it changes the wait);
//   - w.stamping is set only while the timer is armed to fire no later than
//     stampDelay after a clock reading taken before any of the unstamped
//     waiters was queued; an unstamped waiter is queued only while it is
//     set; onTimer, which reads the clock, stamps them all and clears it;
//   - an unstamped waiter is never expired (unstampedDeadline is beyond any
//     reading) and never starts a run until it is stamped.
const (
	coarseMinWait     = time.Second
	stampDelay        = time.Millisecond
	unstampedDeadline = noDeadline - 1
)

// mayJoinUnstampedLocked reports whether a, about to be queued with the
// current MaxWaitDuration, could go unstamped: a blocking waiter, a wait of
// coarseMinWait or more (not NoTimeout), the real clock, no listener (its
// events would want the enqueue time), and a queue that already waits.
func (s *Semaphore) mayJoinUnstampedLocked(a *Acquisition) bool {
	w, wait := s.wait, s.cfg.MaxWaitDuration
	return w.coarse && w.head != nil && wait >= coarseMinWait && wait != NoTimeout && a.isBlocking() && !s.events.active()
}

// stampLocked stamps the unstamped waiters, if any, with the clock reading
// now: their deadline becomes now plus their wait. The first of them
// starts a new run if its deadline is earlier than the one before it (the
// others follow it, all equal).
func (w *waitState) stampLocked(now time.Duration) {
	u := w.unstamped
	if u == nil {
		return
	}
	w.unstamped = nil
	deadline := boundedDeadline(now, w.lastWait)
	for a := u; a != nil; a = a.next {
		a.deadline = deadline
	}
	if u.prev != nil && deadline < u.prev.deadline && !slices.Contains(w.runs, u) {
		w.runs = append(w.runs, u) // u is in the last run, at the tail
	}
}
