package bulkhead

// Shadow mode (Config.ShadowMode): the Semaphore counts its permits as
// usual but never refuses one. Invariants, all under mu:
//   - nobody is queued while ShadowMode is on: a call that finds no free
//     permit is granted at once (free goes negative), and ChangeConfig
//     turning ShadowMode on grants every waiter first (grantAllLocked);
//   - -free (the permit word's free count), when positive, is the number of calls running beyond
//     MaxConcurrentCalls: the calls that would be waiting in the queue had
//     the limit been enforced. It decides the Reason of a CallShadowed:
//     NoWait if the call could not wait (TryAcquirePermission, or a
//     MaxWaitDuration of zero), QueueFull (Evicted in LIFO order) if that
//     many would-be waiters fill MaxQueuedCalls, zero (would have waited)
//     otherwise. A wait is not simulated, so shadow mode never reports a
//     WaitTimeout: whether a would-be waiter would have timed out depends
//     on when permits would have come back, which an unenforced limit does
//     not tell.
//   - turning ShadowMode off leaves the calls in flight running: like a
//     ChangeConfig that shrinks MaxConcurrentCalls, new calls wait or are
//     rejected until enough of them finish.
//
// The fast path is untouched: shadow mode is read only once no permit is
// free.

// shadowGrantLocked grants a call that found no free permit, in shadow
// mode, and publishes its CallShadowed and CallPermitted after releasing
// mu. couldWait is false for TryAcquirePermission, which never waits. k
// is the call's weight.
func (s *Semaphore) shadowGrantLocked(couldWait bool, k int) {
	r := s.shadowReasonLocked(couldWait)
	s.takeNLocked(k) // past the limit: free goes negative
	s.unlock()
	if s.events.active() {
		now := s.clock.Now()
		s.events.publish(Event{Type: CallShadowed, Name: s.name, Time: now, Reason: r})
		s.events.publish(Event{Type: CallPermitted, Name: s.name, Time: now})
	}
}

// shadowReasonLocked is what an enforced limit would have done with a call
// that finds no free permit now.
func (s *Semaphore) shadowReasonLocked(couldWait bool) Reason {
	if !couldWait || s.cfg.MaxWaitDuration == 0 {
		return NoWait
	}
	if waiting := -s.freeLocked(); waiting >= s.cfg.MaxQueuedCalls {
		if s.cfg.QueueOrder == LIFO {
			return Evicted
		}
		return QueueFull
	}
	return 0
}

// grantAllLocked grants every waiter, whether a permit is free or not:
// ChangeConfig turning ShadowMode on, so that no waiter is passed by the
// calls shadow mode lets through. Like grantLocked, each grant is decided
// (mustDecide) and settled here.
func (s *Semaphore) grantAllLocked(d *decidedList) {
	w := s.wait
	if w == nil {
		return
	}
	for w.head != nil {
		a := w.head
		w.unlink(a)
		a.mustDecide(stateGranted, nil)
		s.takeNLocked(weightOf(a))
		w.settled(a, d)
	}
	w.stopTimerIfIdle()
}
