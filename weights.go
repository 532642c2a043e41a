package bulkhead

import (
	"context"
	"fmt"
	"sync"

	"github.com/rxbulkhead/bulkhead/internal/semhook"
)

// Weighted calls on a Semaphore (docs/design.md, "Weighted calls on a
// Semaphore"). A call of weight k takes k permits at once and gives k back;
// a waiter of weight k is granted only when k permits are free.
//
// Invariants (all under mu but for the permit word's fast paths):
//   - a weighted call takes its k permits all at once or not at all: by one
//     CAS of k takes while nobody waits (tryTakeN, markWaitingNLocked), or,
//     queued, in the pass (passLocked) that grants it, which adds k takes
//     while waitingBit is set (only mu's holder moves the word then);
//   - the word's held count is the sum of the weights of the calls holding
//     permits (Metrics.InFlightCalls counts permits, not calls);
//   - a queued waiter of weight k > 1 has a *weightedOwner, which carries
//     its weight; every other queued waiter has weight 1. waitState.weighted
//     counts the queued waiters of weight > 1: while it is 0, every path is
//     the unweighted one (the hand-off, the grant loop of the head);
//   - bounded bypass: a pass grants in queue order (FIFO from the head,
//     LIFO from the tail) every waiter that fits. A waiter that does not
//     fit (k > free) is passed over: it is marked (weightedOwner.passed,
//     counted in waitState.passedOver) and the waiters behind it in that
//     pass may still be granted, each adding its weight to
//     waitState.bypassed, but only while bypassed stays within
//     MaxConcurrentCalls; a waiter behind it that fits but would take
//     bypassed past that bound is held back, and, if heavier than 1,
//     marked too (a lighter one behind may still go; one of weight 1 is
//     not marked: the allowance is spent for everyone behind it).
//     bypassed is reset to 0 only when no marked waiter is queued any
//     more (passedOver falls to 0). A call granted
//     past a waiter W was granted in a pass that looked at W and did not
//     grant it, so W was marked then at the latest: calls behind W take at
//     most MaxConcurrentCalls permits past it in all while it waits, and
//     it is never starved (first in line, it waits for at most
//     MaxConcurrentCalls + k permits to come back);
//   - no stall: every critical section that may leave a waiter able to go
//     (a release, ChangeConfig, an enqueue, a Cancel, an expiry sweep) ends
//     with a pass when a permit is free and a call waits (passIfFreeLocked).
//     A pass leaves a waiter that fits waiting only behind one that does
//     not (k > free), so free < MaxConcurrentCalls: permits are held by
//     running calls, whose release runs the next pass;
//   - a pass looks at most maxPassedOver waiters it cannot grant, so a
//     release holds mu for a bounded time; it then stops, with a waiter
//     that does not fit ahead of those it did not reach (so the no-stall
//     argument holds for them too);
//   - a waiter heavier than MaxConcurrentCalls is never queued: it is
//     rejected at once with a *TooHeavyError, and a ChangeConfig that lowers
//     the limit below a queued waiter's weight rejects that waiter with it
//     (rejectTooHeavyLocked), before its pass.

// maxPassedOver bounds the waiters one pass looks at without granting them
// (they do not fit, or the bypass allowance is spent).
const maxPassedOver = 64

// SemaphoreCall is a call of weight k on a Semaphore: it takes k permits
// and gives k back. Make it with Semaphore.Call; it is a small value, free
// to copy and to keep (Call(k) costs nothing and allocates nothing).
//
// It is a Bulkhead and a BlockingBulkhead, so a weighted call goes through
// the operators, bulkheadhttp and the other helpers as a weight-1 call
// does. Its methods behave as the Semaphore's of the same name, with k
// permits for one: a call is granted only when k permits are free at
// once, and a call that has k permits gives back k (with the same
// SemaphoreCall, or one of the same weight). Mixing weights on one
// Semaphore is the point: a call of weight 1 (the Semaphore's own methods,
// or Call(1)) and a call of weight 8 share its MaxConcurrentCalls permits
// and its queue.
//
// A call heavier than MaxConcurrentCalls could never be granted: it is
// rejected at once with a *TooHeavyError (errors.Is(err, ErrTooHeavy), not
// ErrBulkheadFull), also in shadow mode, and so is a queued call when a
// ChangeConfig lowers MaxConcurrentCalls below its weight. Its CallRejected
// event has no Reason (zero), as the budget's has for a *WeightError.
//
// Queue order with weights (docs/design.md, "Weighted calls on a
// Semaphore"): a waiter is granted when its k permits are free, in queue
// order. When the waiter first in line does not fit, lighter waiters behind
// it may go first, but for at most MaxConcurrentCalls permits in all while
// it waits, so a heavy call is never starved and light calls do not stall
// behind it.
type SemaphoreCall struct {
	s *Semaphore
	k int
}

// Call returns the call of weight k on s: its methods take and give k
// permits. It panics if k < 1 (a weight is a count of permits: a
// programmer error, as x/sync/semaphore's negative weight is). A k above
// MaxConcurrentCalls is not a panic: the limit may change, so such a call
// is rejected when it acquires, with a *TooHeavyError.
func (s *Semaphore) Call(k int) SemaphoreCall {
	if k < 1 {
		panic(fmt.Sprintf("bulkhead %q: Call with weight %d, want at least 1", s.name, k))
	}
	return SemaphoreCall{s: s, k: k}
}

// Weight returns k, the permits the call takes.
func (c SemaphoreCall) Weight() int { return c.k }

// Name returns the name of the call's Semaphore.
func (c SemaphoreCall) Name() string { return c.s.name }

// TooHeavyError is the error of a call of a Semaphore whose weight is more
// than the Semaphore's MaxConcurrentCalls: no amount of waiting could grant
// it. errors.Is(err, ErrTooHeavy) is true and errors.Is(err,
// ErrBulkheadFull) is false: it is not a rejection for lack of permits.
type TooHeavyError struct {
	Name   string // the bulkhead's name
	Weight int    // the call's weight
	Limit  int    // MaxConcurrentCalls when the call was rejected
}

// Error returns `bulkhead "NAME": a call of weight K is heavier than its
// MaxConcurrentCalls of L`.
func (e *TooHeavyError) Error() string {
	return fmt.Sprintf("bulkhead %q: a call of weight %d is heavier than its MaxConcurrentCalls of %d", e.Name, e.Weight, e.Limit)
}

// Is reports whether target is ErrTooHeavy.
func (e *TooHeavyError) Is(target error) bool { return target == ErrTooHeavy }

// weightedOwner is the owner of a queued waiter of weight k > 1, an
// Acquisition of AcquirePermissionAsync or a pooled blocking waiter (then
// blocking is set). It is a separate 16-byte record, so that a waiter of
// weight 1 keeps its 96 bytes. passed is guarded by mu.
type weightedOwner struct {
	s        *Semaphore
	k        int32
	blocking bool // a pooled blocking waiter of SemaphoreCall.AcquirePermission
	passed   bool // passed over by a pass while queued: counted in waitState.passedOver
}

func (o *weightedOwner) cancel(a *Acquisition) bool { return o.s.cancel(a) }

// weightOf returns the weight of a queued or decided waiter of a Semaphore.
func weightOf(a *Acquisition) int {
	if o, ok := a.owner.(*weightedOwner); ok {
		return int(o.k)
	}
	return 1
}

// unlinkWeighted keeps the weighted counts true as a leaves the queue (any
// decision). mu is held.
func (w *waitState) unlinkWeighted(a *Acquisition) {
	o, ok := a.owner.(*weightedOwner)
	if !ok {
		return
	}
	w.weighted--
	if o.passed {
		o.passed = false
		w.passedOver--
		if w.passedOver == 0 {
			w.bypassed = 0 // no passed-over waiter is left: the allowance renews
		}
	}
}

// TryAcquirePermission takes k permits if k are free and nobody is waiting,
// and reports whether it did; it never waits and never overtakes queued
// calls. It publishes CallPermitted, or CallRejected: NoWait, or no Reason
// if k is more than MaxConcurrentCalls (use AcquirePermissionAsync or
// AcquirePermission to get the *TooHeavyError).
func (c SemaphoreCall) TryAcquirePermission() bool {
	s, k := c.s, c.k
	if s.tryTakeN(k) {
		if s.events.active() {
			s.publishSlow(CallPermitted, 0)
		}
		return true
	}
	s.lock()
	if s.tryTakeN(k) {
		s.unlock()
		if s.events.active() {
			s.publishSlow(CallPermitted, 0)
		}
		return true
	}
	if k > s.cfg.MaxConcurrentCalls {
		s.unlock()
		s.publish(CallRejected, 0)
		return false
	}
	if s.cfg.ShadowMode {
		s.shadowGrantLocked(false, k) // mu released
		return true
	}
	s.unlock()
	s.publish(CallRejected, NoWait)
	return false
}

// AcquirePermissionAsync requests k permits without blocking, as
// Semaphore.AcquirePermissionAsync requests one: granted at once (no
// allocation) if k are free and nobody waits, rejected at once (NoWait,
// QueueFull; a *TooHeavyError if k > MaxConcurrentCalls), or queued. A
// queued call of weight k > 1 costs 16 bytes more than one of weight 1
// (its weight's record). Queued, it may be granted before this method
// returns: when calls wait behind a heavier one that does not fit and the
// free permits are enough for it.
func (c SemaphoreCall) AcquirePermissionAsync() *Acquisition {
	s, k := c.s, c.k
	if s.tryTakeN(k) {
		if s.events.active() {
			s.publishSlow(CallPermitted, 0)
		}
		return grantedAcquisition
	}
	if k == 1 {
		return s.acquireAsyncSlow()
	}
	return s.acquireAsyncSlowN(k)
}

// acquireAsyncSlowN is acquireAsyncSlow for a call of weight k > 1.
func (s *Semaphore) acquireAsyncSlowN(k int) *Acquisition {
	s.lock()
	if s.tryTakeN(k) {
		s.unlock()
		if s.events.active() {
			s.publishSlow(CallPermitted, 0)
		}
		return grantedAcquisition
	}
	if err := s.tooHeavyLocked(k); err != nil {
		return RejectedAcquisition(err) // mu released
	}
	if s.cfg.ShadowMode {
		s.shadowGrantLocked(true, k) // mu released
		return grantedAcquisition
	}
	if r := s.rejectAtOnceLocked(); r != nil {
		return r // mu released
	}
	var d decidedList
	s.evictLocked(&d)
	if s.markWaitingNLocked(k) { // k permits came back: nobody was queued, so nobody was evicted
		s.unlock()
		if s.events.active() {
			s.publishSlow(CallPermitted, 0)
		}
		return grantedAcquisition
	}
	a := &Acquisition{owner: &weightedOwner{s: s, k: int32(k)}}
	var g decidedList
	s.enqueueWeightedLocked(a, &g)
	return s.unlockAndDeliverQueued(a, &g, &d)
}

// tooHeavyLocked returns nil, with mu held, if a call of weight k may
// wait; else it releases mu, publishes CallRejected (no Reason) and
// returns the call's *TooHeavyError.
func (s *Semaphore) tooHeavyLocked(k int) error {
	limit := s.cfg.MaxConcurrentCalls
	if k <= wordLimit(limit) {
		return nil
	}
	s.unlock()
	s.publish(CallRejected, 0)
	return &TooHeavyError{Name: s.name, Weight: k, Limit: limit}
}

// enqueueWeightedLocked queues a, a waiter of weight > 1, and runs a pass:
// permits may be free for a (or for waiters behind it) while a heavier
// waiter ahead does not fit.
func (s *Semaphore) enqueueWeightedLocked(a *Acquisition, d *decidedList) {
	s.wait.weighted++
	s.enqueueLocked(a)
	s.passIfFreeLocked(d)
}

// passIfFreeLocked runs a pass if a call waits and a permit is free: the
// end of every critical section that may have left a waiter able to go
// (see the invariants above). Without weighted waiters no permit is ever
// free while a call waits, so it costs one load of the word. mu is held.
func (s *Semaphore) passIfFreeLocked(d *decidedList) {
	if s.wait.head != nil && s.freeLocked() > 0 {
		s.grantLocked(d)
	}
}

// AcquirePermission blocks until k permits are granted, the call is
// rejected (a *FullError, or a *TooHeavyError if k > MaxConcurrentCalls)
// or ctx ends, as Semaphore.AcquirePermission does for one permit. It
// panics if ctx is nil.
func (c SemaphoreCall) AcquirePermission(ctx context.Context) error {
	s, k := c.s, c.k
	if k == 1 {
		return s.AcquirePermission(ctx)
	}
	if ctx == nil {
		panic("bulkhead: AcquirePermission called with a nil context")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.tryTakeN(k) {
		if s.events.active() {
			s.publishSlow(CallPermitted, 0)
		}
		return nil
	}
	s.lock()
	if s.tryTakeN(k) {
		s.unlock()
		if s.events.active() {
			s.publishSlow(CallPermitted, 0)
		}
		return nil
	}
	if err := s.tooHeavyLocked(k); err != nil {
		return err // mu released
	}
	if s.cfg.ShadowMode {
		s.shadowGrantLocked(true, k) // mu released
		return nil
	}
	if r := s.rejectAtOnceLocked(); r != nil {
		return r.err // mu released
	}
	var d decidedList
	s.evictLocked(&d)
	if s.markWaitingNLocked(k) {
		s.unlock()
		if s.events.active() {
			s.publishSlow(CallPermitted, 0)
		}
		return nil
	}
	a := getWaiter(s)
	a.owner = &weightedOwner{s: s, k: int32(k), blocking: true}
	s.enqueueWeightedLocked(a, &d)
	s.unlock()
	if d.head != nil || d.wake != nil {
		decided := d
		go s.deliver(&decided)
	}
	return s.await(ctx, a, k)
}

// FinishCall gives back the call's k permits and publishes CallFinished,
// as Semaphore.FinishCall does for one. It panics, naming the bulkhead, if
// fewer than k permits are held.
func (c SemaphoreCall) FinishCall() {
	s, k := c.s, c.k
	if !s.tryGiveN(k) {
		s.releaseSlowN(k, true, CallStart{})
		return
	}
	if s.events.active() {
		s.publishFinished(CallStart{})
	}
}

// FinishCallStarted is FinishCall with the CallDuration measured from
// start (Semaphore.StartCall), as Semaphore.FinishCallStarted.
func (c SemaphoreCall) FinishCallStarted(start CallStart) {
	s, k := c.s, c.k
	if !s.tryGiveN(k) {
		s.releaseSlowN(k, true, start)
		return
	}
	if s.events.active() {
		s.publishFinished(start)
	}
}

// ReleasePermission gives back the call's k permits without an event (the
// call did not run), as Semaphore.ReleasePermission does for one. It
// panics, naming the bulkhead, if fewer than k permits are held.
func (c SemaphoreCall) ReleasePermission() {
	if !c.s.tryGiveN(c.k) {
		c.s.releaseSlowN(c.k, false, CallStart{})
	}
}

// releaseN gives back k permits without an event.
func (s *Semaphore) releaseN(k int) {
	if !s.tryGiveN(k) {
		s.releaseSlowN(k, false, CallStart{})
	}
}

// releaseSlowN is releaseSlow for k permits: under mu, the k permits go
// back to the word and a pass hands them on.
func (s *Semaphore) releaseSlowN(k int, finished bool, start CallStart) {
	if k == 1 {
		s.releaseSlow(finished, start)
		return
	}
	s.lock()
	if s.tryGiveN(k) {
		s.unlock()
		if finished && s.events.active() {
			s.publishFinished(start)
		}
		return
	}
	if !s.giveNLocked(k) {
		s.unlock()
		panic(fmt.Sprintf("bulkhead %q: released more permits than were acquired", s.name))
	}
	var d decidedList
	s.grantLocked(&d)
	s.unlock()
	if finished {
		s.deliverFinished(&d, start)
		return
	}
	s.deliver(&d)
}

// passLocked grants, in queue order, the waiters that fit, with bounded
// bypass (see the invariants at the top of this file). It is the grant
// loop while a weighted waiter is queued. The caller has checked that the
// wait state exists. mu is held; waitingBit is set (a call waits), so the
// word is mu's.
func (s *Semaphore) passLocked(h *semhook.Hooks, d *decidedList) {
	w := s.wait
	lifo := s.cfg.QueueOrder == LIFO
	a := w.head
	if lifo {
		a = w.tail
	}
	free := s.freeLocked()
	limit := s.cfg.MaxConcurrentCalls
	blocked := false // a waiter ahead in this pass does not fit
	skipped := 0
	for a != nil && free > 0 && skipped < maxPassedOver {
		next := a.next
		if lifo {
			next = a.prev
		}
		k := weightOf(a)
		switch {
		case k > free: // so k > 1: a weighted waiter
			w.markPassed(a)
			blocked = true
			skipped++
		case blocked && w.bypassed+k > limit:
			// The allowance is spent for this one; a lighter one behind may
			// still fit, so this one is passed over too (k > 1: with k = 1
			// the allowance is spent for everyone behind it).
			w.markPassed(a)
			skipped++
		default:
			if blocked {
				w.bypassed += k
			}
			w.unlink(a)
			s.takeNLocked(k)
			free -= k
			h.BeforeDecision()
			a.mustDecide(stateGranted, nil)
			w.settled(a, d)
			h.AfterDecision(a)
		}
		a = next
	}
}

// markPassed marks a, a waiter of weight > 1 that a pass does not grant,
// as passed over: until it leaves, the bypass allowance is not renewed.
func (w *waitState) markPassed(a *Acquisition) {
	if o, ok := a.owner.(*weightedOwner); ok && !o.passed {
		o.passed = true
		w.passedOver++
	}
}

// rejectTooHeavyLocked rejects, with a *TooHeavyError, the waiters heavier
// than the limit in force (ChangeConfig lowered it): nothing could ever
// grant them, and a passed-over one would hold the others back for ever.
// mu is held.
func (s *Semaphore) rejectTooHeavyLocked(d *decidedList) {
	w := s.wait
	if w == nil || w.weighted == 0 {
		return
	}
	limit := s.cfg.MaxConcurrentCalls
	h := semhook.Get() // nil but in tests: internal/linearizability records each rejection
	for a := w.head; a != nil; {
		next := a.next
		if k := weightOf(a); k > wordLimit(limit) {
			w.unlink(a)
			h.BeforeDecision()
			a.mustDecide(stateRejected, &TooHeavyError{Name: s.name, Weight: k, Limit: limit})
			w.settled(a, d)
			h.AfterDecision(a)
		}
		a = next
	}
}

// unlockAndDeliverQueued ends an asynchronous call that queued a (the
// unweighted and the weighted enqueue alike): it releases mu, then delivers
// the grants the enqueue's pass made (g, aside) and then the outcomes of the
// waiters its eviction removed (d, whose panic withdraws a), and returns a.
func (s *Semaphore) unlockAndDeliverQueued(a *Acquisition, g, d *decidedList) *Acquisition {
	s.unlock()
	if g.head != nil || g.wake != nil {
		s.deliverAside(g)
	}
	if d.head != nil || d.wake != nil {
		s.deliverEvictions(d, a)
	}
	return a
}

// deliverAside delivers the grants of a pass that a call made without
// giving a permit back (a Cancel, a newcomer queued behind a heavy waiter):
// the blocking waiters are woken here, the events and callbacks of the
// others run on a fresh goroutine, so that the call runs no callback of
// another call (a Cancel runs only the withdrawn call's). It returns once
// that goroutine has started, so that a call made after it does not run
// ahead of those callbacks.
func (s *Semaphore) deliverAside(d *decidedList) {
	wakeBlocking(d)
	if d.head == nil {
		return
	}
	rest := *d
	var started sync.WaitGroup
	started.Add(1)
	go func() {
		started.Done()
		s.deliver(&rest)
	}()
	started.Wait()
}
