package bulkhead

import (
	"math"
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
	// delivering is true while one goroutine delivers decided outcomes.
	delivering bool

	timer    Timer
	timerAt  time.Duration // deadline the timer is armed for
	timerGen uint64        // identifies the current timer; stale ones do no harm

	// Decided waiters whose outcome has not been delivered yet, in decision
	// order (linked through next). One goroutine at a time delivers them
	// (delivering); others that decide more outcomes append and leave.
	notifyHead, notifyTail *Acquisition
}

// enqueueLocked queues a at the tail with its deadline and makes sure the
// timer will fire by then.
func (s *Semaphore) enqueueLocked(a *Acquisition) {
	w := s.wait
	now := s.sinceEpochLocked()
	a.deadline = clock.Add(now, s.cfg.MaxWaitDuration)
	if w.tail != nil && a.deadline < w.tail.deadline {
		w.unordered = true
	}
	a.linked = true
	a.prev = w.tail
	if w.tail != nil {
		w.tail.next = a
	} else {
		w.head = a
	}
	w.tail = a
	w.queued++
	if w.timer == nil || a.deadline < w.timerAt {
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
				w.reject(a, w.errWaitTimeout)
			} else {
				next = min(next, a.deadline)
			}
			a = n
		}
	} else {
		for w.head != nil && w.head.deadline <= now {
			w.reject(w.head, w.errWaitTimeout)
		}
		if w.head != nil {
			next = w.head.deadline
		}
	}
	if w.head != nil && (w.timer == nil || next < w.timerAt) {
		s.armTimerLocked(now, next)
	}
	w.stopTimerIfIdle()
	s.unlockAndDeliver()
}

// sinceEpochLocked is the clock's time as an offset from the wait state's
// epoch.
func (s *Semaphore) sinceEpochLocked() time.Duration { return sinceEpoch(s.clock, s.wait.epoch) }

// reject unlinks a and, if its CAS wins, queues it for delivery with err.
func (w *waitState) reject(a *Acquisition, err *FullError) {
	w.unlink(a)
	if a.decide(stateRejected, err) {
		w.notify(a)
	}
}

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
	a.prev, a.next, a.linked = nil, nil, false
	w.queued--
	if w.head == nil {
		w.unordered = false
	}
}

// notify appends a decided waiter to the delivery list (reusing its next link,
// free once it is out of the queue).
func (w *waitState) notify(a *Acquisition) {
	if w.notifyTail != nil {
		w.notifyTail.next = a
	} else {
		w.notifyHead = a
	}
	w.notifyTail = a
}

func (w *waitState) popNotified() *Acquisition {
	a := w.notifyHead
	if a == nil {
		return nil
	}
	w.notifyHead = a.next
	if w.notifyHead == nil {
		w.notifyTail = nil
	}
	a.next = nil
	return a
}

// stopTimerIfIdle stops the timer once nobody waits.
func (w *waitState) stopTimerIfIdle() {
	if w.head == nil && w.timer != nil {
		w.timer.Stop()
		w.timer = nil
		w.timerGen++
	}
}
