package bulkhead

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/rxbulkhead/bulkhead/internal/clock"
)

// waitState is the part of a Semaphore used only once it has been full. All
// fields are guarded by Semaphore.mu.
type waitState struct {
	epoch time.Time // deadlines are offsets from epoch (monotonic reading)

	// Prebuilt outcomes of rejections, so that rejecting does not allocate.
	rejectNoWait    *Acquisition
	rejectQueueFull *Acquisition
	errWaitTimeout  *FullError
	errEvicted      *FullError

	// The wait queue, oldest at head. FIFO grants from the head, LIFO from
	// the tail; expiry and eviction always take the head.
	head, tail *Acquisition
	queued     int
	// unordered is set when a waiter was queued with a deadline earlier than
	// the tail's (after MaxWaitDuration shrank): expiry then sweeps the whole
	// queue instead of popping the head. It is cleared when the queue empties.
	unordered bool

	timer    Timer
	timerAt  time.Duration // deadline the timer is armed for
	timerGen uint64        // identifies the current timer; stale ones do no harm

	// inline counts the deliveries running on their deciding goroutines at
	// this moment (atomic, not guarded by mu; see maxInlineDeliveries).
	inline atomic.Int32
}

// enqueueLocked queues a at the tail with its deadline and makes sure the
// timer will fire by then. A wait of NoTimeout has no deadline
// (math.MaxInt64): it reads no clock and arms no timer.
func (s *Semaphore) enqueueLocked(a *Acquisition) {
	w := s.wait
	var now time.Duration
	if s.cfg.MaxWaitDuration == NoTimeout {
		a.deadline = math.MaxInt64
	} else {
		now = s.sinceEpochLocked()
		a.deadline = clock.Add(now, s.cfg.MaxWaitDuration)
	}
	if w.tail != nil && a.deadline < w.tail.deadline {
		w.unordered = true
	}
	a.prev = w.tail
	if w.tail != nil {
		w.tail.next = a
	} else {
		w.head = a
	}
	w.tail = a
	w.queued++
	if a.deadline != math.MaxInt64 && (w.timer == nil || a.deadline < w.timerAt) {
		s.armTimerLocked(now, a.deadline)
	}
}

// armTimerLocked makes the one timer of this Semaphore fire at deadline.
func (s *Semaphore) armTimerLocked(now, deadline time.Duration) {
	w := s.wait
	if w.timer != nil {
		w.timer.Stop()
	}
	w.timerGen++
	gen := w.timerGen
	w.timerAt = deadline
	w.timer = s.clock.AfterFunc(deadline-now, func() { s.onTimer(gen) })
}

// onTimer runs on the Clock's timer goroutine: it rejects every waiter whose
// deadline has passed (WaitTimeout), re-arms the timer for the earliest
// remaining deadline and delivers the rejections on this goroutine.
func (s *Semaphore) onTimer(gen uint64) {
	var d decidedList
	s.mu.Lock()
	w := s.wait
	if gen == w.timerGen {
		w.timer = nil
	}
	now := s.sinceEpochLocked()
	next := time.Duration(math.MaxInt64)
	if w.unordered {
		for a := w.head; a != nil; {
			n := a.next
			if a.deadline <= now {
				w.reject(a, w.errWaitTimeout, &d)
			} else {
				next = min(next, a.deadline)
			}
			a = n
		}
	} else {
		for w.head != nil && w.head.deadline <= now {
			w.reject(w.head, w.errWaitTimeout, &d)
		}
		if w.head != nil {
			next = w.head.deadline
		}
	}
	if w.head != nil && next != math.MaxInt64 && (w.timer == nil || next < w.timerAt) {
		s.armTimerLocked(now, next)
	}
	w.stopTimerIfIdle()
	s.mu.Unlock()
	s.deliver(&d)
}

// sinceEpochLocked is the clock's time as an offset from the wait state's
// epoch.
func (s *Semaphore) sinceEpochLocked() time.Duration { return sinceEpoch(s.clock, s.wait.epoch) }

// reject unlinks a and, if its CAS wins, settles it with err and adds it
// to d.
func (w *waitState) reject(a *Acquisition, err *FullError, d *decidedList) {
	w.unlink(a)
	if a.decide(stateRejected, err) {
		w.settled(a, d)
	} else {
		w.leftCancelled(a)
	}
}

// settled makes the outcome of a, decided under mu by this goroutine,
// visible at once (knownBit, Done closed) and adds a to d for its event and
// callbacks. A blocking waiter gets knownBit here and is woken by deliver
// right after mu is released, before any event or callback (nobody but its
// own goroutine looks at it, and waking it outside the lock keeps the
// critical section short).
func (w *waitState) settled(a *Acquisition, d *decidedList) {
	if a.isBlocking() {
		a.cell.Store(a.cell.Load() | knownBit) // not a.settle: Done is never handed out, Chan gets a send
		a.next = d.wake
		d.wake = a
		return
	}
	a.settle()
	d.push(a)
}

// leftCancelled runs when a waiter popped from the queue had lost its CAS
// to Cancel: the cancellation is made visible now that the waiter has left
// the queue; the goroutine of that Cancel publishes its event and runs its
// callbacks. A blocking waiter's own goroutine cancelled it and needs
// nothing.
func (w *waitState) leftCancelled(a *Acquisition) {
	if !a.isBlocking() {
		a.settle()
	}
}

// linked reports whether a is in the wait queue. An acquisition that is
// not has a nil prev (unlink clears it, enqueueLocked sets it) and is not
// the head; the decided list links through next only.
func (w *waitState) linked(a *Acquisition) bool { return a.prev != nil || w.head == a }

func (w *waitState) unlink(a *Acquisition) {
	if a.prev != nil {
		a.prev.next = a.next
	} else {
		w.head = a.next
	}
	if a.next != nil {
		a.next.prev = a.prev
	} else {
		w.tail = a.prev
	}
	a.prev, a.next = nil, nil
	w.queued--
	if w.head == nil {
		w.unordered = false
	}
}

// stopTimerIfIdle stops the timer once nobody waits.
func (w *waitState) stopTimerIfIdle() {
	if w.head == nil && w.timer != nil {
		w.timer.Stop()
		w.timer = nil
		w.timerGen++
	}
}
