package bulkhead

import (
	"fmt"
	"sync"
	"time"
)

// This file delivers a budget's decisions, with the core's contract
// (docs/design.md, "Delivery: at once, on the deciding goroutine"): the
// deciding goroutine makes each outcome visible under Budget.mu (settle),
// then, after unlocking, gives back the partner permits of the calls it
// rejected, publishes the events and runs the callbacks itself: the first
// decided outcome's inline (within maxInlineDeliveries), each other's on a
// fresh goroutine, returning once those have started.
//
// The Acquisition protocol used here (the owner interface, decide, settle,
// runCallbacks, the cell's state) is the one acquisition.go defines for
// every Bulkhead of this package; budget_deliver.go, budget_admit.go and
// budget_wait.go are the only budget files that touch it.

// BudgetEvent is what a Budget publishes to its listeners (Budget.OnEvent)
// about a call: CallPermitted, CallRejected (Reason: NoWait, QueueFull,
// WaitTimeout, Evicted; zero for a *WeightError), CallFinished and
// CallCancelled. A call with a partner also appears in its partner's own
// events.
type BudgetEvent struct {
	Type    EventType
	Budget  string    // the budget's name
	Partner string    // the partner (flow) of the call
	Class   string    // the call's class
	Weight  int       // the call's weight (permits)
	Time    time.Time // from the budget's Clock
	Reason  Reason    // for CallRejected
	// Wait is how long the call waited in the budget (not for its
	// partner), for a CallPermitted or CallRejected of a call that was
	// queued; zero for one decided at once.
	Wait time.Duration
}

// String renders the event for logs.
func (e BudgetEvent) String() string {
	s := fmt.Sprintf("%s budget %q: partner %q class %q weight %d: %s", e.Time.Format(time.RFC3339Nano), e.Budget, e.Partner, e.Class, e.Weight, e.Type)
	if e.Type == CallRejected {
		s += fmt.Sprintf(" (%s)", e.Reason)
	}
	if e.Wait > 0 {
		s += fmt.Sprintf(" after waiting %s", e.Wait)
	}
	return s
}

// OnEvent registers f to receive every event of the budget and returns a
// func that unregisters it (idempotent). Listeners run synchronously on the
// goroutine that decided the outcome, after it is visible and before its
// callbacks, never under the budget's lock; a panicking listener is
// recovered and skipped. With no listener registered, events cost one
// atomic load. OnEvent panics if f is nil.
func (b *Budget) OnEvent(f func(BudgetEvent)) (remove func()) {
	if f == nil {
		panic("bulkhead: Budget.OnEvent called with a nil listener")
	}
	return b.events.Add(f)
}

// budgetDecided is the work one decision leaves to its goroutine once mu is
// released: a lead step (a withdrawn call's partner permits and its
// CallCancelled, or a release's CallFinished) and the records it decided,
// linked through cnext in decision order. It lives on the deciding
// goroutine's stack; phase and cur record how far delivery got, so that a
// delivery cut short by user code resumes where it stopped.
type budgetDecided struct {
	head, tail  *budgetWaiter
	leadRelease *BudgetPartner // its partner permits to give back first
	leadK       int            // how many (the withdrawn call's weight)
	leadEvent   BudgetEvent    // published first if Type != 0 (Time set then)
	phase       uint8
	cur         *budgetWaiter
}

func (d *budgetDecided) push(w *budgetWaiter) {
	w.cnext = nil
	if d.tail != nil {
		d.tail.cnext = w
	} else {
		d.head = w
	}
	d.tail = w
}

// deliver runs on the deciding goroutine, after mu was released: the lead
// step, then the partner permits of the rejected calls (before any of their
// callbacks, so that a callback that retries finds the permit back), then
// the events, then the callbacks (runDecided). Each step is taken off d
// before it runs user code (a partner's own callbacks, a listener); if that
// code panics or calls runtime.Goexit, a deferred call hands the rest to a
// fresh goroutine and the panic goes on here, so no decided outcome is left
// undelivered and no partner permit stranded.
func (b *Budget) deliver(d *budgetDecided) {
	if d.head == nil && d.leadRelease == nil && d.leadEvent.Type == 0 {
		return
	}
	handedOff := false
	defer func() {
		if !handedOff {
			rest := *d
			go b.deliver(&rest)
		}
	}()
	for {
		switch d.phase {
		case 0:
			d.phase = 1
			if p := d.leadRelease; p != nil {
				d.leadRelease = nil
				p.partRelease(d.leadK)
			}
		case 1:
			d.phase, d.cur = 2, d.head
			if e := d.leadEvent; e.Type != 0 {
				d.leadEvent.Type = 0
				if b.events.Active() {
					e.Budget, e.Time = b.name, b.clock.Now()
					b.events.Publish(e)
				}
			}
		case 2:
			for w := d.cur; w != nil; w = d.cur {
				d.cur = w.cnext
				if w.p.part != nil && w.acq.cell.Load()&outcomeMask == stateRejected {
					w.p.partRelease(w.k)
				}
			}
			d.phase, d.cur = 3, d.head
		case 3:
			if h := b.decidedHook; h != nil {
				for w := d.head; w != nil; w = w.cnext {
					h(&w.acq)
				}
			}
			if b.events.Active() {
				for w := d.cur; w != nil; w = d.cur {
					d.cur = w.cnext
					b.publishOutcome(w)
				}
			}
			d.phase = 4
		default:
			handedOff = true
			b.runDecided(d)
			return
		}
	}
}

// runDecided runs the callbacks of the records on d, whose events are
// published: the first with callbacks inline (within maxInlineDeliveries of
// this budget), every other on a fresh goroutine, and returns once those
// have started.
func (b *Budget) runDecided(d *budgetDecided) {
	var inline *budgetWaiter
	var started *sync.WaitGroup
	for w := d.head; w != nil; {
		n := w.cnext // read before w's callbacks may run
		w.cnext = nil
		if w.acq.cell.HasCallbacks() { // frozen since settle, which this goroutine ran
			if inline == nil && b.inline.Add(1) <= maxInlineDeliveries {
				inline = w
			} else {
				if inline == nil {
					b.inline.Add(-1)
				}
				if started == nil {
					started = new(sync.WaitGroup)
				}
				started.Add(1)
				go func(w *budgetWaiter) {
					started.Done()
					w.acq.runCallbacks()
				}(w)
			}
		}
		w = n
	}
	if inline != nil {
		defer b.inline.Add(-1)
		inline.acq.runCallbacks()
	}
	if started != nil {
		started.Wait()
	}
}

// publishOutcome publishes the CallPermitted or CallRejected of a record
// this goroutine decided.
func (b *Budget) publishOutcome(w *budgetWaiter) {
	c, k := w.lane.cg.class, w.k
	switch w.acq.cell.Load() & outcomeMask {
	case stateGranted:
		b.publish(CallPermitted, 0, w.lane.flow, c, k, w.enq)
	case stateRejected:
		b.publish(CallRejected, reasonOf(w.acq.err), w.lane.flow, c, k, w.enq)
	}
}

// publish publishes an event about a call of flow f, class c and weight k
// that arrived in the budget at enq (unknownWait: decided at once).
func (b *Budget) publish(t EventType, r Reason, f *budgetFlow, c *budgetClass, k int, enq time.Duration) {
	now := b.clock.Now()
	var wait time.Duration
	if enq != unknownWait {
		wait = max(now.Sub(b.epoch)-enq, 0)
	}
	b.events.Publish(BudgetEvent{Type: t, Budget: b.name, Partner: f.name, Class: c.name, Weight: k, Time: now, Reason: r, Wait: wait})
}

// leadEventOf is the event of a call of flow f, class c and weight k,
// to be published first by deliver.
func leadEventOf(t EventType, f *budgetFlow, c *budgetClass, k int) BudgetEvent {
	return BudgetEvent{Type: t, Partner: f.name, Class: c.name, Weight: k}
}
