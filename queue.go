package bulkhead

import (
	"sync/atomic"
	"time"

	"github.com/rxbulkhead/bulkhead/internal/semhook"
)

// waitState is the part of a Semaphore used only once it has been full. All
// fields are guarded by Semaphore.mu.
type waitState struct {
	state *atomic.Uint64 // the Semaphore's permit word: stopTimerIfIdle clears its waitingBit
	epoch time.Time      // deadlines are offsets from epoch (monotonic reading)
	// lastWait is the MaxWaitDuration of the latest enqueue with a bounded
	// wait: a decided call's enqueue time is its deadline minus it
	// (waittime.go).
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

	// Coarse deadlines (stamp.go): coarse is set for the real clock; the
	// unstamped waiters are the suffix from unstamped; stamping says they
	// may be queued (the timer fires within stampDelay).
	coarse    bool
	stamping  bool
	unstamped *Acquisition

	// Weighted waiters (weights.go): weighted counts the queued waiters of
	// weight > 1 (0: every path is the unweighted one); passedOver counts
	// the queued ones a pass has passed over; bypassed is the permits
	// granted past a waiter that did not fit since passedOver was last 0,
	// at most MaxConcurrentCalls.
	weighted   int
	passedOver int
	bypassed   int

	// inline counts the deliveries running on their deciding goroutines at
	// this moment (atomic, not guarded by mu; see inlineCount).
	inline inlineCount
}

// enqueueLocked queues a at the tail with its deadline and makes sure the
// timer will fire by then. A wait of NoTimeout has no deadline (at or
// beyond noDeadline, see waittime.go): it arms no timer, and reads the
// clock only if a listener is registered. A blocking waiter joining a
// waiting queue may go unstamped instead (stamp.go).
func (s *Semaphore) enqueueLocked(a *Acquisition) {
	w := s.wait
	wait := s.cfg.MaxWaitDuration
	var now time.Duration
	switch {
	case wait == NoTimeout:
		if w.unstamped != nil { // (ChangeConfig stamps them first: kept for the invariant)
			w.stampLocked(s.sinceEpochLocked())
		}
		a.deadline = s.openDeadlineLocked()
	case w.stamping && s.mayJoinUnstampedLocked(a):
		a.deadline = unstampedDeadline
		if w.unstamped == nil {
			w.unstamped = a
		}
	default:
		now = s.sinceEpochLocked()
		w.stampLocked(now)
		a.deadline = boundedDeadline(now, wait)
		if !w.stamping && s.mayJoinUnstampedLocked(a) {
			// Blocking waiters that join after this one need no clock
			// reading until the timer's, within stampDelay.
			if w.timer == nil || w.timerAt > now+stampDelay {
				s.armTimerLocked(now, now+stampDelay)
			}
			w.stamping = true
		}
	}
	if wait != NoTimeout {
		w.lastWait = wait // an open wait leaves the bounded ones' enqueue times alone
	}
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
	if a.deadline < unstampedDeadline && (w.timer == nil || a.deadline < w.timerAt) {
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
// deadline had passed when it started (WaitTimeout), in batches of at most
// semhook.DefaultBatch per critical section, re-arms the timer for the
// earliest remaining deadline and delivers the rejections (deliverSweep).
// Blocking waiters are woken after each batch, before any event or
// callback. Each batch is atomic; the sweep as a whole is not: between two
// batches, other callers may grant, cancel or read the waiters the sweep
// has not reached yet (internal/linearizability checks it batch by batch).
func (s *Semaphore) onTimer(gen uint64) {
	h := semhook.Get() // nil but in tests
	batch := h.BatchSize()
	var d decidedList
	s.lockForSweep(h)
	w := s.wait
	if gen == w.timerGen {
		w.timer = nil
	}
	now := s.sinceEpochLocked()
	w.stampLocked(now)
	w.stamping = false
	for {
		r := s.expireLocked(now, batch, h, &d)
		if !r.more {
			// An expired waiter may have been a heavy one that held
			// lighter ones back, or the last passed-over one.
			s.passIfFreeLocked(&d)
			if w.head != nil {
				if next := w.earliestDeadlineLocked(); next < noDeadline && (w.timer == nil || next < w.timerAt) {
					s.armTimerLocked(now, next)
				}
			}
			w.stopTimerIfIdle()
			s.unlockForSweep(h, r)
			break
		}
		s.unlockForSweep(h, r)
		wakeBlocking(&d)
		s.lockForSweep(h)
	}
	s.deliverSweep(&d)
}

func (s *Semaphore) lockForSweep(h *semhook.Hooks) {
	if h != nil && h.Lock != nil {
		h.Lock()
	}
	s.lock()
}

func (s *Semaphore) unlockForSweep(h *semhook.Hooks, r sweepBatch) {
	s.unlock()
	if h != nil && h.Unlock != nil {
		h.Unlock(semhook.Batch{Examined: r.examined, Rejected: r.rejected, Last: !r.more})
	}
}

// sweepBatch is what one batch of a sweep did.
type sweepBatch struct {
	examined int  // waiters looked at
	rejected int  // waiters rejected (WaitTimeout), at most the batch size
	more     bool // it stopped at the bound with expired waiters left
}

// expireLocked rejects, with WaitTimeout, the waiters whose deadline is at
// or before now, in queue order (each run's head while it has expired: the
// runs lie in queue order and each run's expired waiters are its first
// ones), and stops after batch of them.
func (s *Semaphore) expireLocked(now time.Duration, batch int, h *semhook.Hooks, d *decidedList) (r sweepBatch) {
	w := s.wait
	budget := batch
	for w.head != nil {
		r.examined++
		if w.head.deadline > now {
			break
		}
		if budget == 0 {
			r.more = true
			return r
		}
		budget--
		a := w.head
		h.BeforeDecision()
		w.reject(a, w.errWaitTimeout, d)
		h.AfterDecision(a)
		r.rejected++
	}
	for i := 0; i < len(w.runs); {
		r.examined++
		a := w.runs[i]
		if a.deadline > now {
			i++
			continue
		}
		if budget == 0 {
			r.more = true
			return r
		}
		budget--
		h.BeforeDecision()
		w.reject(a, w.errWaitTimeout, d) // unlink moves runs[i] on, or drops it
		h.AfterDecision(a)
		r.rejected++
	}
	return r
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

// reject unlinks a, decides it rejected with err, settles it and adds it
// to d.
func (w *waitState) reject(a *Acquisition, err *FullError, d *decidedList) {
	w.unlink(a)
	a.mustDecide(stateRejected, err)
	w.settled(a, d)
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

func (w *waitState) unlink(a *Acquisition) {
	if w.weighted != 0 {
		w.unlinkWeighted(a)
	}
	if len(w.runs) > 0 {
		w.unlinkFromRuns(a)
	}
	if a == w.unstamped {
		w.unstamped = a.next // the suffix's next, or nil
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

// stopTimerIfIdle ends what waiting needs once nobody waits, at the end of
// every critical section that may have emptied the queue: it clears the
// permit word's waitingBit (free permits are taken without mu again) and
// stops the timer.
func (w *waitState) stopTimerIfIdle() {
	if w.head != nil {
		return
	}
	if w.state.Load()&waitingBit != 0 {
		w.state.And(^waitingBit)
	}
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
		w.timerGen++
		w.stamping = false
	}
}
