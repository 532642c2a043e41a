package bulkhead

import (
	"math"
	"time"
)

// budgetWaiter is the record of a call that waits: for its partner's
// permit (lane == nil), then in the budget. Its Acquisition is the one the
// caller holds, so a waiting call is one allocation.
//
// Ownership: the fields below acq are guarded by Budget.mu once the record
// is shared (queued, or registered with its partner's Acquisition), except
// cnext, which also links decided records on the deciding goroutine's
// delivery list after they left the queue, and enq, which the deciding
// goroutine reads after that. The outcome is decided by acq's CAS alone.
type budgetWaiter struct {
	acq Acquisition // owner: the waiter itself (withdraw)

	p     *BudgetPartner
	class *budgetClass // the class asked for, until lane is set
	pa    *Acquisition // the partner's acquisition, while waiting for it
	lane  *lane        // set, under mu, once the call is in the budget
	k     int          // weight (an int: a budget's Size, hence a weight, may pass math.MaxInt32)
	// bypassed is what grants behind this waiter took from it while it was
	// blocked (passLocked); it never exceeds MaxBypass.
	bypassed int
	seq      uint64        // arrival order in the budget
	enq      time.Duration // arrival in the budget (offset from the epoch), unknownWait if decided at once

	lprev, lnext *budgetWaiter // lane, FIFO
	cprev, cnext *budgetWaiter // class, arrival order; cnext then links the delivery list
}

// linked reports whether w waits in the budget (it is in its lane's list).
func (w *budgetWaiter) linked() bool {
	return w.lprev != nil || (w.lane != nil && w.lane.head == w)
}

// enqueueLocked links w (its lane, weight and enq set) at the tail of its
// lane and of its class's list, and, if arm, makes sure the timer will fire
// by its deadline.
func (b *Budget) enqueueLocked(w *budgetWaiter, arm bool) {
	l := w.lane
	c := l.cg.class
	b.seq++
	w.seq = b.seq
	w.lprev = l.tail
	if l.tail != nil {
		l.tail.lnext = w
	} else {
		l.head = w
	}
	l.tail = w
	w.cprev = c.tail
	if c.tail != nil {
		c.tail.cnext = w
	} else {
		c.head = w
	}
	c.tail = w
	c.waiting++
	l.cg.group.waiting++
	b.waiting++
	if l.head == w {
		l.cg.push(l)
	}
	if arm {
		if dl := c.deadline(w.enq); dl != math.MaxInt64 && (b.timer == nil || dl < b.timerAt) {
			b.armLocked(dl)
		}
	}
}

// unlinkLocked takes w out of its lane and its class's list, keeping its
// lane's place in its heap (a lane that empties leaves it).
func (b *Budget) unlinkLocked(w *budgetWaiter) {
	l := w.lane
	c := l.cg.class
	wasHead := w.lprev == nil
	if w.lprev != nil {
		w.lprev.lnext = w.lnext
	} else {
		l.head = w.lnext
	}
	if w.lnext != nil {
		w.lnext.lprev = w.lprev
	} else {
		l.tail = w.lprev
	}
	w.lprev, w.lnext = nil, nil
	if w.cprev != nil {
		w.cprev.cnext = w.cnext
	} else {
		c.head = w.cnext
	}
	if w.cnext != nil {
		w.cnext.cprev = w.cprev
	} else {
		c.tail = w.cprev
	}
	w.cprev, w.cnext = nil, nil
	c.waiting--
	l.cg.group.waiting--
	b.waiting--
	if wasHead && l.idx >= 0 {
		if l.head == nil {
			l.cg.remove(l)
		} else {
			l.cg.fix(l)
		}
	}
}

// cancel is Acquisition.Cancel of a budget call (the owner protocol of
// acquisition.go): the CAS decides first, as for every owner other than a
// Semaphore (a budget call's decisions race through that CAS, not through
// b.mu), then withdraw takes the call out of whichever level it waits for,
// and a's callbacks run last.
func (w *budgetWaiter) cancel(a *Acquisition) bool {
	if !a.decide(stateCancelled, nil) {
		return false
	}
	w.withdraw(a)
	a.runCallbacks()
	return true
}

// withdraw is called by cancel after its CAS won. While the call waits for its partner, the
// partner's acquisition is cancelled; if the partner granted first, its
// grant callback (partnerDone) finds the call cancelled and gives the
// permit back. Once the call is in the budget, it leaves the queue (a pass
// runs: a waiter leaving may let others in), the cancellation is made
// visible under mu, and then the partner permits are given back, the grants
// of the pass delivered and CallCancelled published, on this goroutine.
//
// Both run user code before Cancel gets to a's own callbacks (the partner's
// listeners; the callbacks of the calls that the partner permits or the pass
// grant). If that code panics or calls runtime.Goexit, Cancel never runs
// them, so a deferred call hands them to a fresh goroutine (a is settled by
// then), and the panic goes on.
func (w *budgetWaiter) withdraw(a *Acquisition) {
	done := false
	defer func() {
		if !done {
			go a.runCallbacks()
		}
	}()
	w.withdrawBothLevels(a)
	done = true
}

func (w *budgetWaiter) withdrawBothLevels(a *Acquisition) {
	b := w.p.b
	b.mu.Lock()
	if w.lane == nil {
		pa := w.pa
		b.mu.Unlock()
		a.settle()
		pa.Cancel()
		return
	}
	var d budgetDecided
	if w.linked() {
		b.unlinkLocked(w)
		b.passLocked(&d)
		b.stopTimerIfIdleLocked()
	}
	a.settle()
	b.mu.Unlock()
	if w.p.part != nil { // a flow has no partner permit
		d.leadRelease, d.leadK = w.p, w.k
	}
	d.leadEvent = leadEventOf(CallCancelled, w.lane.flow, w.lane.cg.class, w.k)
	b.deliver(&d)
}

// laneLess orders lanes for max-min fairness: fewer permits held first,
// then the one whose first waiter arrived first.
func laneLess(a, b *lane) bool {
	if a.held != b.held {
		return a.held < b.held
	}
	return a.head.seq < b.head.seq
}

// push, remove and fix keep cg.lanes a min-heap by laneLess, each lane's
// idx its position (-1 when out).
func (cg *classGroup) push(l *lane) {
	l.idx = len(cg.lanes)
	cg.lanes = append(cg.lanes, l)
	cg.up(l.idx)
}

func (cg *classGroup) remove(l *lane) {
	i, n := l.idx, len(cg.lanes)-1
	if i != n {
		cg.swap(i, n)
	}
	cg.lanes[n] = nil
	cg.lanes = cg.lanes[:n]
	l.idx = -1
	if i != n {
		cg.fixAt(i)
	}
}

func (cg *classGroup) fix(l *lane) { cg.fixAt(l.idx) }

func (cg *classGroup) fixAt(i int) {
	if !cg.down(i) {
		cg.up(i)
	}
}

func (cg *classGroup) swap(i, j int) {
	h := cg.lanes
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}

func (cg *classGroup) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !laneLess(cg.lanes[i], cg.lanes[p]) {
			return
		}
		cg.swap(i, p)
		i = p
	}
}

func (cg *classGroup) down(i int) bool {
	start, n := i, len(cg.lanes)
	for {
		m := 2*i + 1
		if m >= n {
			break
		}
		if r := m + 1; r < n && laneLess(cg.lanes[r], cg.lanes[m]) {
			m = r
		}
		if !laneLess(cg.lanes[m], cg.lanes[i]) {
			break
		}
		cg.swap(i, m)
		i = m
	}
	return i > start
}

// armLocked makes the budget's one timer fire at deadline dl.
func (b *Budget) armLocked(dl time.Duration) {
	if b.timer != nil {
		b.timer.Stop()
	}
	b.timerGen++
	gen := b.timerGen
	b.timerAt = dl
	b.timer = b.clock.AfterFunc(max(dl-b.sinceEpoch(), 0), func() { b.onTimer(gen) })
}

// earliestDeadlineLocked returns the earliest deadline of a waiter, the
// head of some class's list, or math.MaxInt64 if no waiter has one.
func (b *Budget) earliestDeadlineLocked() time.Duration {
	next := time.Duration(math.MaxInt64)
	for _, c := range b.classes {
		if c.head != nil {
			next = min(next, c.deadline(c.head.enq))
		}
	}
	return next
}

// rearmLocked arms the timer for the earliest deadline, or stops it if no
// waiter has one (after ChangeConfig, which may move every deadline).
func (b *Budget) rearmLocked() {
	if next := b.earliestDeadlineLocked(); next != math.MaxInt64 {
		if b.timer == nil || next != b.timerAt {
			b.armLocked(next)
		}
		return
	}
	b.stopTimerLocked()
}

// stopTimerIfIdleLocked stops the timer once nobody waits.
func (b *Budget) stopTimerIfIdleLocked() {
	if b.waiting == 0 {
		b.stopTimerLocked()
	}
}

func (b *Budget) stopTimerLocked() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
		b.timerGen++
	}
}

// budgetSweepBatch bounds the waiters one critical section of an expiry
// sweep rejects, as the Semaphore's sweepBatch does.
const budgetSweepBatch = 4096

// onTimer runs on the clock's timer goroutine: it rejects every waiter
// whose deadline had passed when it started (WaitTimeout), at most
// budgetSweepBatch per critical section, runs a pass (waiters leaving may
// let others in), re-arms the timer for the earliest deadline left and
// delivers the outcomes on this goroutine. A timer that fires after it was
// replaced or stopped only re-arms.
func (b *Budget) onTimer(gen uint64) {
	var d budgetDecided
	b.mu.Lock()
	if gen == b.timerGen {
		b.timer = nil
	}
	now := b.sinceEpoch()
	for b.expireLocked(now, &d) {
		b.mu.Unlock()
		b.mu.Lock()
	}
	b.passLocked(&d)
	if next := b.earliestDeadlineLocked(); next != math.MaxInt64 {
		if b.timer == nil || next < b.timerAt {
			b.armLocked(next)
		}
	} else {
		b.stopTimerLocked()
	}
	b.mu.Unlock()
	b.deliver(&d)
}

// expireLocked rejects, with WaitTimeout, up to budgetSweepBatch waiters
// whose deadline is at or before now, from the head of each class's list,
// and reports whether it stopped at that bound.
func (b *Budget) expireLocked(now time.Duration, d *budgetDecided) (more bool) {
	n := 0
	for _, c := range b.classes {
		for c.head != nil && c.deadline(c.head.enq) <= now {
			if n == budgetSweepBatch {
				return true
			}
			n++
			b.rejectWaiterLocked(c.head, c.errTimeout, d)
		}
	}
	return false
}
