package bulkhead

import (
	"context"
	"sync"
)

// A blocking waiter is the record AcquirePermission queues. Unlike the
// Acquisition of AcquirePermissionAsync it is never shown to anyone, so the
// record is pooled and reused, and it has no callbacks. Its done channel has
// one slot and receives exactly one value, sent by the goroutine that decides
// the outcome right after it releases Semaphore.mu (deliver), before it
// publishes any event or runs any callback.
//
// The channel is made fresh for each wait, by the waiting goroutine, and not
// pooled with the record: a channel belongs to the testing/synctest bubble of
// the goroutine that made it, and a pooled one that crosses into another
// bubble or out of it is a fatal error in the runtime (and a channel made
// outside a bubble does not count as durably blocking inside it, so
// synctest.Wait would not see the waiter). See docs/benchmarks.md for what
// this one allocation costs.
//
// Ownership of a record: the waiting goroutine takes it from the pool and
// queues it; while it is linked, mu's holders may unlink it and decide it;
// the decider touches it no more after the send (it reads next first). The waiting goroutine owns
// it again once it has either received the value or withdrawn it under mu
// (Semaphore.cancel), and only then puts it back.
//
// The record is marked as a blocking waiter by its owner, a *waiterOwner
// (isBlocking), and its channel is its cell's (Reset, Chan): the cell is
// never published the usual way (PublishLocked would close the channel),
// only its state word is set (waitState.settled).
var waiterPool = sync.Pool{New: func() any { return new(Acquisition) }}

// waiterOwner is the owner of a pooled blocking waiter: its Semaphore, under
// a type of its own so that the record needs no flag to say what it is.
// Nobody can call Cancel on a pooled waiter (it is never shown); its own
// goroutine withdraws it with Semaphore.cancel.
type waiterOwner Semaphore

func (o *waiterOwner) cancel(a *Acquisition) bool { return (*Semaphore)(o).cancel(a) }

// isBlocking reports whether a is a pooled blocking waiter of
// AcquirePermission. Its owner is set before a is queued and cleared only
// after, so the holders of the Semaphore's lock may ask.
func (a *Acquisition) isBlocking() bool {
	switch o := a.owner.(type) {
	case *waiterOwner:
		return true
	case *weightedOwner:
		return o.blocking
	}
	return false
}

// getWaiter takes a record from the pool and makes it a fresh waiter of s.
// It resets every field a wait reads (putWaiter resets nothing: the
// record's stale channel and owner are dropped by the pool's GC-time
// clearing at worst, and a record is reset once per wait, not twice).
func getWaiter(s *Semaphore) *Acquisition {
	a := waiterPool.Get().(*Acquisition)
	a.owner, a.err = (*waiterOwner)(s), nil
	a.cell.Reset(make(chan struct{}, 1))
	return a
}

func putWaiter(a *Acquisition) { waiterPool.Put(a) }

// AcquirePermission blocks until a permit is granted, the call is rejected
// (a *FullError) or ctx ends (ctx.Err()). If ctx is already done it fails
// without taking a permit. When ctx ends first it leaves no permit held and
// no waiter queued: a permit granted concurrently is given back.
//
// It returns as soon as its outcome is decided or ctx ends, never waiting
// for a callback of another waiter: the goroutine that grants or rejects it
// wakes it in the decision itself. A waiting call costs one small allocation
// (its channel) and no goroutine; its CallPermitted or CallRejected event is published by the
// calling goroutine once it wakes. In a LIFO queue, the callbacks of a
// waiter it evicts run on a fresh goroutine, not on this one.
//
// A call that joins a queue that already waits, with a MaxWaitDuration of
// a second or more, the default clock and no event listener, reads no
// clock for its deadline: the next reading stamps it, within a
// millisecond, so its wait ends never early and at most 1 ms late
// (stamp.go).
//
// It panics if ctx is nil ("bulkhead: AcquirePermission called with a nil
// context"), as every entry point of this module that takes a context does.
func (s *Semaphore) AcquirePermission(ctx context.Context) error {
	if ctx == nil {
		panic("bulkhead: AcquirePermission called with a nil context")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.tryTake() {
		if s.events.active() {
			s.publishSlow(CallPermitted, 0)
		}
		return nil
	}
	s.lock()
	if s.tryTake() {
		s.unlock()
		if s.events.active() {
			s.publishSlow(CallPermitted, 0)
		}
		return nil
	}
	if s.cfg.ShadowMode {
		s.shadowGrantLocked(true, 1) // mu released
		return nil
	}
	if r := s.rejectAtOnceLocked(); r != nil {
		return r.err // mu released
	}
	var d decidedList
	s.evictLocked(&d)
	if s.markWaitingLocked() { // a permit came back: no call was evicted (the queue was empty)
		s.unlock()
		if s.events.active() {
			s.publishSlow(CallPermitted, 0)
		}
		return nil
	}
	a := getWaiter(s)
	s.enqueueLocked(a)
	s.passIfFreeLocked(&d) // a permit may be free behind a heavy waiter, or an evicted one (weights.go)
	s.unlock()
	if d.head != nil || d.wake != nil {
		evicted := d
		go s.deliver(&evicted)
	}
	return s.await(ctx, a, 1)
}

// await waits for the outcome of a, a queued blocking waiter of weight k,
// or for ctx to end, and puts a back in the pool.
func (s *Semaphore) await(ctx context.Context, a *Acquisition, k int) error {
	if ctxDone := ctx.Done(); ctxDone != nil {
		select {
		case <-a.cell.Chan():
		case <-ctxDone:
			if s.cancel(a) {
				putWaiter(a)
				return ctx.Err()
			}
			// Decided concurrently: the value is sent or about to be.
			<-a.cell.Chan()
			if a.cell.Load()&outcomeMask == stateGranted {
				// Give the grant back, as if ctx had won ("pretend we
				// didn't", as x/sync/semaphore does).
				s.publishWaited(CallPermitted, 0, a.deadline)
				putWaiter(a)
				s.releaseN(k)
				return ctx.Err()
			}
		}
	} else { // a context that never ends
		<-a.cell.Chan()
	}
	err := a.err
	s.publishOutcome(a)
	putWaiter(a)
	return err
}
