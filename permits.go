package bulkhead

// The permit word. A Semaphore keeps its free permits, the permits held
// and whether a call waits in one atomic word (Semaphore.state), so that
// taking a free permit while nobody waits, and giving one back while
// nobody waits, is one compare-and-swap and no lock, as Tokio's semaphore
// keeps its permits in one atomic (its waiter list has a lock, as the
// queue here has mu). Everything else takes mu.
//
// Layout (uint64):
//
//	bits 32..63  free permits, an int32 (negative after a shrinking
//	             ChangeConfig, or in shadow mode), at most wordPermits
//	bits  2..31  permits held, at most wordPermits
//	bit   1      listenerBit: an event listener is registered
//	bit   0      waitingBit: a call is queued
//
// A limit above wordPermits counts as wordPermits (more than a billion
// calls can never hold permits at once); Metrics reports the configured
// limit and the held count, so it is exact.
//
// Invariants:
//   - free + held is the limit (clamped), but for ChangeConfig's Add of the
//     difference, which moves it to the new limit in one atomic step;
//   - waitingBit is set and cleared under mu only: set, by the CAS of
//     markWaitingLocked, before a call is queued, and cleared by
//     waitState.stopTimerIfIdle, which every critical section that may
//     empty the queue ends with (grant, cancel, sweep, shadow mode's
//     grant-all): so a queued call always finds it set, and a bit set at
//     the end of a critical section means a call is queued;
//   - a take (held+1, free-1) happens only when free > 0 and waitingBit is
//     clear, by CAS: a free permit is never taken past a queued call
//     (no barging), with or without mu. A give (held-1, free+1) happens by
//     CAS only when held > 0 and waitingBit is clear; with waitingBit set
//     it happens under mu, which hands the permit to the next waiter in
//     the same critical section, so no observer sees it free while calls
//     wait. A give that finds held at 0 is one too many: it panics, under
//     mu, naming the bulkhead;
//   - markWaitingLocked's CAS decides a call that found no free permit
//     against a give that raced it without mu: if a permit came back, the
//     call takes it instead of queueing;
//   - while waitingBit is set nothing but mu's holder changes the word, so
//     the grant loop and the sweep read it and Add to it freely;
//   - every access is a sync/atomic operation, so sequentially consistent:
//     the keyed registry's fence relies on it (registry.go): a keyed call's
//     take (CAS) comes before its load of its entry's dead mark, and the
//     sweep's CAS of that mark comes before its load of the word (busy, via
//     Metrics), so at least one side sees the other;
//   - listenerBit is set and cleared under mu only, by OnEvent and the
//     func it returns, in the same critical section as the listener list
//     changes: at every release of mu it says whether a listener is
//     registered. It changes no count and no rule above; it only sends
//     the quiet fast paths (takeQuiet, giveQuiet: the inlined bodies of
//     TryAcquirePermission, AcquirePermissionAsync, ReleasePermission and
//     FinishCall) to their slow paths, which take and give as tryTake and
//     tryGive do (ignoring the bit, still without mu while nobody waits)
//     and then publish. So the fast paths need not test the listener list
//     at all, and events stay exact: a call that starts after OnEvent
//     returns sees the bit (every access is sequentially consistent) and
//     publishes; a call racing OnEvent or its remove func may or may not
//     publish, as it could when the fast path loaded the list itself.
//
// A weighted call (SemaphoreCall, weights.go) takes and gives its k
// permits with one CAS of k times the take (tryTakeN, tryGiveN), under the
// same rules: all k at once or none, only while nobody waits.
const (
	waitingBit  uint64 = 1
	listenerBit uint64 = 2
	heldShift          = 2
	freeShift          = 32
	wordPermits        = 1<<30 - 1
	heldMask           = wordPermits << heldShift
	// takeDelta added to the word takes a permit (held+1, free-1: the -1
	// is 2^32-1 in the free bits, mod 2^64); subtracted, it gives one back.
	takeDelta uint64 = 1<<heldShift | (1<<32-1)<<freeShift
)

// wordFor returns the word of a Semaphore whose limit is limit and that
// has nothing held and nobody waiting.
func wordFor(limit int) uint64 { return uint64(wordLimit(limit)) << freeShift }

// wordLimit is a limit as the word counts it.
func wordLimit(limit int) int { return min(limit, wordPermits) }

func freeOf(v uint64) int { return int(int32(v >> freeShift)) }
func heldOf(v uint64) int { return int(v & heldMask >> heldShift) }

// takeQuiet is the inlined fast path of TryAcquirePermission and
// AcquirePermissionAsync: one load, one test and one CAS, which takes a
// free permit if one is free, nobody waits and no listener is registered
// (so there is no event to publish). It does not retry: if no permit is
// free, a call waits, a listener is registered or the CAS loses to
// another call's, it reports false, having done nothing, and the caller's
// slow path goes on with tryTake.
func (s *Semaphore) takeQuiet() bool {
	v := s.state.Load()
	// free < 1, tested on the whole word: the bits below freeShift add
	// less than 1<<freeShift, so int64(v) < 1<<freeShift iff freeOf(v) < 1
	// (one compare, where freeOf costs a shift and a sign extension).
	if v&(waitingBit|listenerBit) != 0 || int64(v) < 1<<freeShift {
		return false
	}
	return s.state.CompareAndSwap(v, v+takeDelta)
}

// giveQuiet is takeQuiet for a give-back (ReleasePermission, FinishCall):
// it gives a permit back if one is held, nobody waits and no listener is
// registered, with one CAS and no retry; else it reports false, having
// done nothing, and the caller's slow path goes on with tryGive.
func (s *Semaphore) giveQuiet() bool {
	v := s.state.Load()
	if v&(waitingBit|listenerBit) != 0 || v&heldMask == 0 { // nothing held: heldOf(v) == 0
		return false
	}
	return s.state.CompareAndSwap(v, v-takeDelta)
}

// tryTake takes a free permit if one is free and nobody waits, whether a
// listener is registered or not. It is the fast path of the blocking
// AcquirePermission, the first step of the slow path of the other
// acquires (before mu, as after takeQuiet said no), and their retry
// under mu.
func (s *Semaphore) tryTake() bool {
	for {
		v := s.state.Load()
		if v&waitingBit != 0 || freeOf(v) <= 0 {
			return false
		}
		if s.state.CompareAndSwap(v, v+takeDelta) {
			return true
		}
	}
}

// tryGive gives a permit back if nobody waits and one is held (whether a
// listener is registered or not: see giveQuiet for the inlined one); it reports
// false, having done nothing, if a call waits (the permit goes to it, under
// mu) or none is held (an over-release: it panics under mu).
func (s *Semaphore) tryGive() bool {
	for {
		v := s.state.Load()
		if v&waitingBit != 0 || heldOf(v) == 0 {
			return false
		}
		if s.state.CompareAndSwap(v, v-takeDelta) {
			return true
		}
	}
}

// markWaitingLocked sets waitingBit for a call that found no free permit
// and is about to be queued. If a permit came back meanwhile (a give that
// raced it without mu), the call takes it instead and markWaitingLocked
// reports true. mu is held.
func (s *Semaphore) markWaitingLocked() (took bool) {
	for {
		v := s.state.Load()
		if v&waitingBit != 0 {
			return false
		}
		if freeOf(v) > 0 {
			if s.state.CompareAndSwap(v, v+takeDelta) {
				return true
			}
			continue
		}
		if s.state.CompareAndSwap(v, v|waitingBit) {
			return false
		}
	}
}

// freeLocked returns the free permits (negative after a shrink). mu is
// held; the word may still move under it while nobody waits.
func (s *Semaphore) freeLocked() int { return freeOf(s.state.Load()) }

// takeLocked counts a permit as taken whatever the word says: a grant to a
// waiter (waitingBit set: only mu's holder changes the word) or a grant
// of shadow mode past the limit. mu is held.
func (s *Semaphore) takeLocked() { s.state.Add(takeDelta) }

// giveLocked counts a permit as given back, under mu, for a release whose
// tryGive found a call waiting or no permit held. It reports false, having
// done nothing, if none is held (an over-release). It is a CAS loop, not an
// Add: with waitingBit clear, fast paths may move the word meanwhile, and
// the check of held and the give must be one step. mu is held.
func (s *Semaphore) giveLocked() bool {
	for {
		v := s.state.Load()
		if heldOf(v) == 0 {
			return false
		}
		if s.state.CompareAndSwap(v, v-takeDelta) {
			return true
		}
	}
}

// resizeLocked moves the word to the limit next from prev in one atomic
// step (free permits change by the difference; held ones stay). mu is
// held.
func (s *Semaphore) resizeLocked(prev, next int) {
	s.state.Add(uint64(int64(wordLimit(next)-wordLimit(prev)) << freeShift))
}

// clearWaitingLocked clears waitingBit once the queue is empty. mu is held.
func (s *Semaphore) clearWaitingLocked() { s.state.And(^waitingBit) }

// setListeningLocked makes listenerBit say whether a listener is
// registered (OnEvent, after the list changed). mu is held.
func (s *Semaphore) setListeningLocked(on bool) {
	if on {
		s.state.Or(listenerBit)
	} else {
		s.state.And(^listenerBit)
	}
}

// takeN is the word's change for a take of k permits (k ≤ wordPermits):
// k times takeDelta, mod 2^64 (held+k, free-k).
func takeN(k int) uint64 { return uint64(k) * takeDelta }

// tryTakeN is tryTake for k permits: it takes k if k are free and nobody
// waits, all at once, by one CAS.
func (s *Semaphore) tryTakeN(k int) bool {
	for {
		v := s.state.Load()
		if v&waitingBit != 0 || freeOf(v) < k {
			return false
		}
		if s.state.CompareAndSwap(v, v+takeN(k)) {
			return true
		}
	}
}

// tryGiveN is tryGive for k permits: it gives k back if nobody waits and
// at least k are held; else it does nothing and reports false.
func (s *Semaphore) tryGiveN(k int) bool {
	for {
		v := s.state.Load()
		if v&waitingBit != 0 || heldOf(v) < k {
			return false
		}
		if s.state.CompareAndSwap(v, v-takeN(k)) {
			return true
		}
	}
}

// giveNLocked is giveLocked for k permits: it reports false, having done
// nothing, if fewer than k are held (an over-release). mu is held.
func (s *Semaphore) giveNLocked(k int) bool {
	for {
		v := s.state.Load()
		if heldOf(v) < k {
			return false
		}
		if s.state.CompareAndSwap(v, v-takeN(k)) {
			return true
		}
	}
}

// markWaitingNLocked is markWaitingLocked for a call of k permits: if k
// came back meanwhile it takes them (true), else it sets waitingBit (or
// finds it set) and reports false. mu is held.
func (s *Semaphore) markWaitingNLocked(k int) (took bool) {
	for {
		v := s.state.Load()
		if v&waitingBit != 0 {
			return false
		}
		if freeOf(v) >= k {
			if s.state.CompareAndSwap(v, v+takeN(k)) {
				return true
			}
			continue
		}
		if s.state.CompareAndSwap(v, v|waitingBit) {
			return false
		}
	}
}

// takeNLocked is takeLocked for k permits. mu is held.
func (s *Semaphore) takeNLocked(k int) { s.state.Add(takeN(k)) }
