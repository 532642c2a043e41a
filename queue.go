package bulkhead

import (
	"sync/atomic"
	"time"

	"github.com/rxbulkhead/bulkhead/internal/clock"
)

// waitState is the part of a Semaphore used only once it has been full. All
// fields are guarded by Semaphore.mu.
type waitState struct {
	epoch time.Time // deadlines are offsets from epoch (monotonic reading)
	// lastWait is the MaxWaitDuration of the latest enqueue: a decided
	// call's enqueue time is its deadline minus it (waittime.go).
	lastWait time.Duration

	// Prebuilt outcomes of rejections, so that rejecting does not allocate.
	rejectNoWait    *Acquisition
	rejectQueueFull *Acquisition
	errWaitTimeout  *FullError
	errEvicted      *FullError

	// The wait queue, oldest at head. FIFO grants from the head, LIFO from
	// the tail; eviction always takes the head.
	head, tail *Acquisition
	queued     int
	// runs splits the queue into runs of non-decreasing deadlines, so that
	// expiry pops expired waiters from the head of each run and looks at no
	// other: it costs O(runs + expired) per sweep, never a walk of the
	// queue. The first run starts at head and is not listed; runs holds the
	// first waiter of every later one, in queue order. A new run starts
	// when a waiter is queued with a deadline earlier than the tail's
	// (MaxWaitDuration shrank, or a bounded wait follows NoTimeout ones),
	// so runs is empty unless ChangeConfig shortened the wait while calls
	// waited; a run that empties leaves the list (unlink).
	runs []*Acquisition

	timer    Timer
	timerAt  time.Duration // deadline the timer is armed for
	timerGen uint64        // identifies the current timer; stale ones do no harm

	// inline counts the deliveries running on their deciding goroutines at
	// this moment (atomic, not guarded by mu; see maxInlineDeliveries).
	inline atomic.Int32
}

// enqueueLocked queues a at the tail with its deadline and makes sure the
// timer will fire by then. A wait of NoTimeout has no deadline (at or
// beyond noDeadline, see waittime.go): it arms no timer, and reads the
// clock only if a listener is registered.
func (s *Semaphore) enqueueLocked(a *Acquisition) {
	w := s.wait
	var now time.Duration
	if s.cfg.MaxWaitDuration == NoTimeout {
		a.deadline = s.openDeadlineLocked()
	} else {
		now = s.sinceEpochLocked()
		a.deadline = clock.Add(now, s.cfg.MaxWaitDuration)
	}
	w.lastWait = s.cfg.MaxWaitDuration
	if w.tail != nil && a.deadline < w.tail.deadline {
		w.runs = append(w.runs, a)
	}
	a.prev = w.tail
	if w.tail != nil {
		w.tail.next = a
	} else {
		w.head = a
	}
	w.tail = a
	w.queued++
	if a.deadline < noDeadline && (w.timer == nil || a.deadline < w.timerAt) {
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

// sweepBatch bounds the waiters one critical section of an expiry sweep
// rejects: rejecting one takes a few tens of nanoseconds, so a batch holds
// mu well under a millisecond, and a sweep of a million expired waiters
// lets other callers in between its batches.
const sweepBatch = 4096

// sweepObserver, if set (by tests, before any Semaphore is used), is told
// after each batch of an expiry sweep how many waiters it looked at and
// how many it rejected. It costs one load per batch when unset.
var sweepObserver func(examined, expired int)

// onTimer runs on the Clock's timer goroutine: it rejects every waiter whose
// deadline had passed when it started (WaitTimeout), in batches of at most
// sweepBatch per critical section, re-arms the timer for the earliest
// remaining deadline and delivers the rejections (deliverSweep). Blocking
// waiters are woken after each batch, before any event or callback.
func (s *Semaphore) onTimer(gen uint64) {
	var d decidedList
	s.lock()
	w := s.wait
	if gen == w.timerGen {
		w.timer = nil
	}
	now := s.sinceEpochLocked()
	for s.expireLocked(now, &d) {
		s.unlock()
		wakeBlocking(&d)
		s.lock()
	}
	if w.head != nil {
		if next := w.earliestDeadlineLocked(); next < noDeadline && (w.timer == nil || next < w.timerAt) {
			s.armTimerLocked(now, next)
		}
	}
	w.stopTimerIfIdle()
	s.unlock()
	s.deliverSweep(&d)
}

// expireLocked rejects, with WaitTimeout, up to sweepBatch waiters whose
// deadline is at or before now, taking each run's head while it has
// expired, and reports whether it stopped at the bound with more left to
// look at.
func (s *Semaphore) expireLocked(now time.Duration, d *decidedList) (more bool) {
	w := s.wait
	budget, examined := sweepBatch, 0
	defer func() {
		if sweepObserver != nil {
			sweepObserver(examined, sweepBatch-budget)
		}
	}()
	for w.head != nil {
		examined++
		if w.head.deadline > now {
			break
		}
		if budget == 0 {
			return true
		}
		budget--
		w.reject(w.head, w.errWaitTimeout, d)
	}
	for i := 0; i < len(w.runs); {
		examined++
		a := w.runs[i]
		if a.deadline > now {
			i++
			continue
		}
		if budget == 0 {
			return true
		}
		budget--
		w.reject(a, w.errWaitTimeout, d) // unlink moves runs[i] on, or drops it
	}
	return false
}

// earliestDeadlineLocked returns the earliest deadline in a non-empty
// queue: the earliest head of its runs.
func (w *waitState) earliestDeadlineLocked() time.Duration {
	next := w.head.deadline
	for _, a := range w.runs {
		next = min(next, a.deadline)
	}
	return next
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
	a.deadline = w.enqueuedAtLocked(a) // for Event.Wait, see waittime.go
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
	if len(w.runs) > 0 {
		w.unlinkFromRuns(a)
	}
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
}

// unlinkFromRuns keeps runs true when a, still linked, leaves the queue:
// if a starts a run, the run starts at a.next instead, or leaves the list
// if a was its only member. It costs O(runs).
func (w *waitState) unlinkFromRuns(a *Acquisition) {
	if a == w.head {
		// The first run, which runs does not list: if a was its only
		// member, the second run becomes the first.
		if a.next == w.runs[0] {
			w.dropRun(0)
		}
		return
	}
	for i, r := range w.runs {
		if r != a {
			continue
		}
		if a.next != nil && (i+1 == len(w.runs) || a.next != w.runs[i+1]) {
			w.runs[i] = a.next
		} else {
			w.dropRun(i)
		}
		return
	}
}

func (w *waitState) dropRun(i int) {
	n := copy(w.runs[i:], w.runs[i+1:])
	w.runs[i+n] = nil
	w.runs = w.runs[:i+n]
}

// stopTimerIfIdle stops the timer once nobody waits.
func (w *waitState) stopTimerIfIdle() {
	if w.head == nil && w.timer != nil {
		w.timer.Stop()
		w.timer = nil
		w.timerGen++
	}
}
