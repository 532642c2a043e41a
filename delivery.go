package bulkhead

import (
	"sync"

	"github.com/rxbulkhead/bulkhead/internal/outcome"
)

// This file runs the callbacks of decided outcomes. The contract (OnDone,
// docs/design.md "Delivery: at once, on the deciding goroutine"):
//   - the goroutine that decides an outcome makes it visible at once (settle)
//     and then runs its callbacks itself: there is no shared deliverer, so
//     callbacks of outcomes decided on different goroutines run
//     concurrently and a blocking callback delays only its own goroutine;
//   - one call that grants several outcomes (ChangeConfig) runs the first
//     one's callbacks itself and each other's on a fresh goroutine;
//   - an expiry sweep runs the callbacks of the waiters it rejected one
//     after the other on the sweeping goroutine (sweepRelay), and a fresh
//     goroutine carries on with the rest whenever one blocks for longer
//     than relayStall;
//   - a Semaphore runs at most maxInlineDeliveries deliveries inline at
//     once (counted over all goroutines, nested or not); past that bound the
//     next delivery runs on a fresh goroutine, so a chain of callbacks that
//     release inside their callback keeps a bounded stack;
//   - a deciding call returns only after every callback it handed to a
//     fresh goroutine has started (FIFO in execution);
//   - a panicking callback does not stop the ones registered after it
//     (they run on a fresh goroutine) and goes on on its own goroutine.

// maxInlineDeliveries bounds the deliveries a Semaphore runs on their
// deciding goroutines at once. A nested level is about six frames (release,
// deliver, runCallbacks, outcome.RunHandOff, the callback, its FinishCall), a few
// hundred bytes, so a chain's stack stays within some kilobytes, while many
// callbacks may run concurrently before any goroutine is started.
const maxInlineDeliveries = 32

// runCallbacks runs a's callbacks in registration order on the calling
// goroutine. It must be called once, by the goroutine that decided the
// outcome, after settle. If a callback panics, the remaining ones are run on
// a fresh goroutine and the panic goes on (outcome.RunHandOff).
func (a *Acquisition) runCallbacks() {
	first, rest, ok := a.cell.Take()
	if !ok {
		return
	}
	outcome.RunHandOff(a.errOf(a.cell.Load()), first, rest)
}

// decidedList links, through their next field, the acquisitions (pooled
// blocking waiters excepted) decided by one call of a Semaphore, in decision
// order. It lives on the deciding goroutine's stack; the acquisitions on it
// have left the queue, so their next link is free.
type decidedList struct {
	head, tail *Acquisition
	// wake links the pooled blocking waiters decided by the same call, to
	// be woken first.
	wake *Acquisition
}

func (d *decidedList) push(a *Acquisition) {
	if d.tail != nil {
		d.tail.next = a
	} else {
		d.head = a
	}
	d.tail = a
}

// deliver runs on the deciding goroutine, after mu was released: it wakes
// the blocking waiters it decided, publishes the events of the other
// decided outcomes, then runs their callbacks (see the contract at the top
// of this file).
func (s *Semaphore) deliver(d *decidedList) {
	wakeBlocking(d)
	if d.head == nil {
		return
	}
	if s.events.active() {
		s.announce(d)
	}
	s.runDecided(d)
}

// wakeBlocking wakes the blocking waiters on d and empties d.wake. It runs
// no user code.
func wakeBlocking(d *decidedList) {
	for a := d.wake; a != nil; {
		n := a.next // the record belongs to its waiter once woken
		a.next = nil
		a.cell.Chan() <- struct{}{}
		a = n
	}
	d.wake = nil
}

// announce publishes the events of the outcomes in d. A listener's panic is
// recovered by publish; a listener that calls runtime.Goexit ends this
// goroutine before the callbacks of d run, so a deferred call hands them to
// a fresh goroutine instead: no decided outcome is left undelivered.
func (s *Semaphore) announce(d *decidedList) {
	announced := false
	defer func() {
		if !announced {
			rest := *d
			go s.runDecided(&rest)
		}
	}()
	for a := d.head; a != nil; a = a.next {
		s.publishOutcome(a)
	}
	announced = true
}

// deliverFinished is deliver for a FinishCall that handed its permit on:
// CallFinished is published first (before the CallPermitted of the grant
// it made). If a listener calls runtime.Goexit there, the whole delivery
// of d goes to a fresh goroutine, so the waiter granted is still woken.
func (s *Semaphore) deliverFinished(d *decidedList, start CallStart) {
	if s.events.active() {
		published := false
		defer func() {
			if !published {
				rest := *d
				go s.deliver(&rest)
			}
		}()
		s.publishFinished(start)
		published = true
	}
	s.deliver(d)
}

// runDecided runs the callbacks of the outcomes in d, whose events are
// published: the first with callbacks inline (within maxInlineDeliveries),
// every other on a fresh goroutine, and returns once those have started.
func (s *Semaphore) runDecided(d *decidedList) {
	w := s.wait // set before the decisions in d, never reset
	var inline *Acquisition
	var started *sync.WaitGroup
	for a := d.head; a != nil; {
		n := a.next // read before a's callbacks may run
		a.next = nil
		if a.cell.HasCallbacks() { // frozen since settle, which this goroutine ran
			if inline == nil && w.inline.Add(1) <= maxInlineDeliveries {
				inline = a
			} else {
				if inline == nil {
					w.inline.Add(-1)
				}
				if started == nil {
					started = new(sync.WaitGroup)
				}
				started.Add(1)
				go runStarted(a, started)
			}
		}
		a = n
	}
	if inline != nil {
		defer w.inline.Add(-1)
		inline.runCallbacks()
	}
	if started != nil {
		started.Wait()
	}
}

// runStarted runs a's callbacks on a fresh goroutine, after telling the
// deciding goroutine that they have started.
func runStarted(a *Acquisition, started *sync.WaitGroup) {
	started.Done()
	a.runCallbacks()
}

// publishOutcome publishes the event of an acquisition this goroutine
// decided: CallPermitted or CallRejected, with the time it waited (a
// withdrawal's CallCancelled is published by withdraw). a.deadline holds its
// enqueue offset since settled (waittime.go).
func (s *Semaphore) publishOutcome(a *Acquisition) {
	switch a.cell.Load() & outcomeMask {
	case stateGranted:
		s.publishWaited(CallPermitted, 0, a.deadline)
	case stateRejected:
		if fe, ok := a.err.(*FullError); ok {
			s.publishWaited(CallRejected, fe.Reason, a.deadline)
		}
	}
}
