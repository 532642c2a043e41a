package bulkhead

import (
	"runtime"
	"sync"
	"sync/atomic"

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
//     once per generation (counted over all goroutines, nested or not);
//     past that bound the next delivery runs on a fresh goroutine, which
//     starts a new generation, so a chain of callbacks that release inside
//     their callback keeps a bounded stack and starts one goroutine per 32
//     grants (see inlineCount);
//   - a deciding call returns only after every callback it handed to a
//     fresh goroutine has started (FIFO in execution);
//   - a panicking callback does not stop the ones registered after it
//     (they run on a fresh goroutine) and goes on on its own goroutine.

// maxInlineDeliveries bounds the deliveries a Semaphore runs on their
// deciding goroutines at once within one generation (see inlineCount). A
// nested level is about six frames (release, deliver, runDecided,
// runCallbacks, outcome.RunHandOff, the callback), a few hundred bytes, so
// a chain's stack stays within some kilobytes, while many callbacks may
// run concurrently before any goroutine is started.
const maxInlineDeliveries = 32

// maxInlineTotal bounds the deliveries running inline at once over every
// generation: it bounds the stack of any one goroutine, whose nested
// deliveries may span generations (a callback that grants again after the
// chain it started was handed off), at about 1024 levels.
const maxInlineTotal = 1024

// inlineCount counts the deliveries running inline, on their deciding
// goroutines, so that a chain of callbacks that release inside their
// callback keeps a bounded stack without a goroutine per grant.
//
// Go has no goroutine-local state, so the count cannot tell a nested
// delivery from one on another goroutine. It is kept per generation: when
// a delivery finds maxInlineDeliveries in progress in the current
// generation, it goes to a fresh goroutine and starts a new generation, in
// which that goroutine's chain nests up to the bound again. The
// deliveries of older generations still in progress (the goroutine that
// handed off is unwinding them, or concurrent callbacks run them) no longer
// count against the bound, only against maxInlineTotal. So a chain of n
// releases inside callbacks starts about n/32 goroutines, where one count
// over every goroutine started one per grant once it was reached (the
// goroutine that handed off had not unwound yet). Invariants:
//   - one word packs the generation's count (bits 0-19), the count over
//     every generation (bits 20-39) and the generation (bits 40-63, which
//     may wrap: a delivery older than 2^24 generations then leaves from the
//     current count, lowering it, which maxInlineTotal still bounds);
//   - enter adds to both counts in one Add and undoes it if over a bound;
//     leave takes 1 from the total, and from the generation's count only if
//     the generation is still the one it entered in (one CAS decides);
//   - newGeneration moves to the next generation with a count of 0, once
//     per generation (a CAS from the generation that was found full).
type inlineCount struct{ word atomic.Uint64 }

const (
	inlineOne      = 1 | 1<<20 // one delivery, in both counts
	inlineTotalOne = 1 << 20
	inlineGenShift = 40
	inlineMask     = 1<<20 - 1
)

// enter counts a delivery that is to run inline and reports whether it
// may: ok, and gen is the generation to leave from. If not, nothing is
// counted, and full reports whether the generation's bound was reached
// (the caller then hands off and starts a new generation). yield reports
// that the delivery is the first of its generation while deliveries of
// older ones are still in progress: the goroutine that handed off is
// unwinding them, and with one P it gets to only if this one yields (see
// runDecided).
func (c *inlineCount) enter() (gen uint64, ok, full, yield bool) {
	v := c.word.Add(inlineOne)
	gen = v >> inlineGenShift
	cur, total := v&inlineMask, v>>20&inlineMask
	if cur <= maxInlineDeliveries && total <= maxInlineTotal {
		return gen, true, false, cur == 1 && total > 1
	}
	c.leave(gen)
	return gen, false, cur > maxInlineDeliveries, false
}

// leave uncounts a delivery that entered in generation gen.
func (c *inlineCount) leave(gen uint64) {
	for {
		v := c.word.Load()
		d := uint64(inlineTotalOne)
		if v>>inlineGenShift == gen {
			d = inlineOne
		}
		if c.word.CompareAndSwap(v, v-d) {
			return
		}
	}
}

// newGeneration starts the generation after gen, with a count of 0, unless
// another goroutine already did.
func (c *inlineCount) newGeneration(gen uint64) {
	for {
		v := c.word.Load()
		if v>>inlineGenShift != gen {
			return
		}
		if c.word.CompareAndSwap(v, v&^inlineMask+1<<inlineGenShift) {
			return
		}
	}
}

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
// published: the first with callbacks inline (within the bounds of
// inlineCount), every other on a fresh goroutine, and returns once those
// have started. If the first cannot run inline because its generation is
// full, a chain of releases inside callbacks has reached the bound: it
// goes on on a fresh goroutine (runChained), in a new generation.
func (s *Semaphore) runDecided(d *decidedList) {
	w := s.wait // set before the decisions in d, never reset
	var inline *Acquisition
	var gen uint64
	first := true // the next acquisition with callbacks is the first
	var started *sync.WaitGroup
	for a := d.head; a != nil; {
		n := a.next // read before a's callbacks may run
		a.next = nil
		if !a.cell.HasCallbacks() { // frozen since settle, which this goroutine ran
			a = n
			continue
		}
		run := runStarted
		if first {
			first = false
			var ok, full, yield bool
			if gen, ok, full, yield = w.inline.enter(); ok {
				if yield {
					// The chain moved to this goroutine at the bound; let
					// the one it left unwind first (with one P it would
					// wait for a preemption, its stack and its count of
					// deliveries kept, and the chain would soon find
					// maxInlineTotal reached).
					runtime.Gosched()
				}
				inline = a
				a = n
				continue
			}
			if full {
				w.inline.newGeneration(gen)
				run = runChained
			}
		}
		if started == nil {
			started = new(sync.WaitGroup)
		}
		started.Add(1)
		go run(a, started)
		a = n
	}
	if inline != nil {
		defer w.inline.leave(gen)
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

// runChained is runStarted for the delivery that continues a chain past
// maxInlineDeliveries: the chain will nest up to that many deliveries
// deep on this goroutine, so its stack is grown for them first.
func runChained(a *Acquisition, started *sync.WaitGroup) {
	started.Done()
	growStack(0)
	a.runCallbacks()
}

// chainStack is about the stack a chain of maxInlineDeliveries nested
// deliveries takes: each level of release, delivery and callback frames
// takes about 700 bytes (1 KB with the race detector), which
// TestANestedDeliveryLevelFitsInChainStack checks against chainLevel.
const chainStack = maxInlineDeliveries * chainLevel

// growStack grows the calling goroutine's stack to hold chainStack more
// bytes, in one copy of a stack that is still nearly empty. A goroutine
// starts with a small stack that the runtime doubles whenever a call
// needs more, copying it each time; each copy walks every frame on it, so
// growing level by level under a chain of 32 nested deliveries copied it
// four times, over up to 250 frames, and that was nearly all of a chain's
// cost (CockroachDB grows the stacks of its deep goroutines the same way).
// It is a hint: a runtime that grows stacks otherwise only loses the gain.
//
//go:noinline
func growStack(i int) byte {
	var pad [chainStack]byte
	return pad[i]
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
		switch e := a.err.(type) {
		case *FullError:
			s.publishWaited(CallRejected, e.Reason, a.deadline)
		case *TooHeavyError:
			s.publishWaited(CallRejected, 0, a.deadline)
		}
	}
}
