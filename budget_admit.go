package bulkhead

import (
	"fmt"
	"time"
)

// This file decides who gets the budget's permits: what a call may take
// (sharedAvailAfterLocked, limits), the admission order (candidateLocked),
// the dispatch pass with its bounded bypass (passLocked), a newcomer
// (admit) and a permit given back (release). docs/design.md, "The hub
// budget", states the rules and proves their bounds.

// maxPassSkips bounds the lanes one pass takes out of their heaps because
// their first call does not fit (or would cost a blocked waiter more than
// MaxBypass): each costs a heap removal and a push, so a pass holds mu for a
// bounded time. When a pass stops there, fewer shared permits are free than
// the heaviest call it passed over needs.
const maxPassSkips = 64

// sharedAvailAfterLocked returns what the shared part of the budget would
// leave to a call of class c and group g after a grant of k permits to a
// call of class gc and group gg (k = 0: now). It is the free permits minus
// the unused reserves of the other groups, minus the headroom of the
// classes above c that c must leave (less what c still misses of its own
// Share). It may be negative.
func (b *Budget) sharedAvailAfterLocked(c *budgetClass, g *budgetGroup, gc *budgetClass, gg *budgetGroup, k int) int {
	others := b.reserved - g.reserve
	if k > 0 && gg != g {
		others += max(0, gg.nominal-gg.lendable-(gg.held+k)) - gg.reserve
	}
	held := c.held
	if gc == c {
		held += k
	}
	excl := max(0, c.hrAbove-max(0, c.cfg.Share-held))
	return b.cfg.Size - (b.held + k) - others - excl
}

func (b *Budget) sharedAvailLocked(c *budgetClass, g *budgetGroup) int {
	return b.sharedAvailAfterLocked(c, g, c, g, 0)
}

// limitAvail is what g's limit (Nominal + BorrowingLimit) still allows it.
func (g *budgetGroup) limitAvail() int {
	if g.limit == Unbounded {
		return Unbounded
	}
	return g.limit - g.held
}

// attainableLocked is the most a call of class c and group g could ever be
// granted at the current configuration, with every other permit free.
func (b *Budget) attainableLocked(c *budgetClass, g *budgetGroup) int {
	others := 0
	for _, x := range b.groups {
		if x != g {
			others += max(0, x.nominal-x.lendable)
		}
	}
	return min(b.cfg.Size-others-max(0, c.hrAbove-c.cfg.Share), g.limit)
}

// accountLocked adds k permits (negative: gives them back) to l and to its
// class, group and the budget, keeping the reserves and l's place in its
// heap.
func (b *Budget) accountLocked(l *lane, k int) {
	g := l.flow.group
	b.held += k
	l.cg.class.held += k
	g.held += k
	r := max(0, g.nominal-g.lendable-g.held)
	b.reserved += r - g.reserve
	g.reserve = r
	l.held += k
	if l.idx >= 0 {
		l.cg.fix(l)
	}
}

// candidateLocked returns the first waiter in admission order among the
// classes, class-groups and lanes not passed over in this pass:
//  1. the first class, in priority order, that holds fewer than its Share
//     and has waiters; else the first class with waiters;
//  2. in it, among the groups below their Nominal, the lane with the least
//     (held, arrival of its first waiter); if none is below, the least over
//     all groups;
//  3. that lane's first waiter.
//
// A first waiter whose Cancel already won its CAS is unlinked on the way
// (its withdraw will find it gone).
func (b *Budget) candidateLocked() *budgetWaiter {
	for {
		c := b.classToServeLocked()
		if c == nil {
			return nil
		}
		cg := c.groupToServe(b.pass)
		if cg == nil {
			c.skip = b.pass
			continue
		}
		w := cg.lanes[0].head
		if w.acq.cell.Load()&outcomeMask != statePending {
			b.unlinkLocked(w)
			w.acq.settle()
			continue
		}
		return w
	}
}

func (b *Budget) classToServeLocked() *budgetClass {
	for _, c := range b.classes {
		if c.waiting > 0 && c.skip != b.pass && c.held < c.cfg.Share {
			return c
		}
	}
	for _, c := range b.classes {
		if c.waiting > 0 && c.skip != b.pass {
			return c
		}
	}
	return nil
}

// groupToServe returns the class-group whose best lane comes first (step 2
// of candidateLocked), nil if every one is passed over or empty.
func (c *budgetClass) groupToServe(pass uint64) *classGroup {
	var best *classGroup
	bestUnder := false
	for _, cg := range c.groups {
		if cg.skip == pass || len(cg.lanes) == 0 {
			continue
		}
		under := cg.group.held < cg.group.nominal
		switch {
		case best == nil, under && !bestUnder:
		case under == bestUnder && laneLess(cg.lanes[0], best.lanes[0]):
		default:
			continue
		}
		best, bestUnder = cg, under
	}
	return best
}

// passLocked grants waiters in admission order while they fit, collecting
// the decided ones in d. A candidate that does not fit is passed over: its
// whole class-group when nothing is left for it (its group at its limit,
// or no shared permit beyond the reserves and headroom), else its lane.
//
// Bounded bypass: every candidate passed over for lack of shared permits
// is blocked in this pass. Each later grant is charged to every blocked
// waiter by the shared permits it takes that the waiter could have used
// (waiter.bypassed, which accumulates over passes), and a grant that would
// bring a blocked waiter's charges above MaxBypass is not made: the
// permits stay free for it. The pass stops after maxPassSkips lanes taken
// out.
func (b *Budget) passLocked(d *budgetDecided) {
	if b.waiting == 0 {
		return
	}
	b.pass++
	var blockedArr [8]*budgetWaiter
	blocked := blockedArr[:0]
	skips := 0
	for skips < maxPassSkips {
		w := b.candidateLocked()
		if w == nil {
			break
		}
		l := w.lane
		c, g, k := l.cg.class, l.flow.group, w.k
		if la := g.limitAvail(); k > la {
			// Only the group's own permits coming back can help.
			if la <= 0 {
				l.cg.skip = b.pass
			} else {
				b.skipLaneLocked(l)
				skips++
			}
			continue
		}
		sa := b.sharedAvailLocked(c, g)
		if k > sa {
			blocked = append(blocked, w)
			if sa <= 0 {
				l.cg.skip = b.pass
			} else {
				b.skipLaneLocked(l)
				skips++
			}
			continue
		}
		if len(blocked) > 0 && !b.chargeLocked(blocked, c, g, k) {
			if b.reserved == 0 {
				break // every later grant would cost that waiter too
			}
			b.skipLaneLocked(l) // a grant out of its own group's reserve may still pass
			skips++
			continue
		}
		b.grantLocked(w, d)
	}
	b.restoreSkippedLocked()
}

// chargeLocked charges a grant of k permits to a call of class c and group
// g to every blocked waiter, by what it takes from that waiter's shared
// permits, and reports true; or, if that would bring one of them above
// MaxBypass, charges nothing and reports false.
func (b *Budget) chargeLocked(blocked []*budgetWaiter, c *budgetClass, g *budgetGroup, k int) bool {
	for _, h := range blocked {
		hc, hg := h.lane.cg.class, h.lane.flow.group
		charge := b.sharedAvailLocked(hc, hg) - b.sharedAvailAfterLocked(hc, hg, c, g, k)
		if charge > 0 && h.bypassed+charge > b.cfg.MaxBypass {
			return false
		}
	}
	for _, h := range blocked {
		hc, hg := h.lane.cg.class, h.lane.flow.group
		h.bypassed += b.sharedAvailLocked(hc, hg) - b.sharedAvailAfterLocked(hc, hg, c, g, k)
	}
	return true
}

// skipLaneLocked takes l out of its heap for the rest of the pass.
func (b *Budget) skipLaneLocked(l *lane) {
	l.cg.remove(l)
	b.skipped = append(b.skipped, l)
}

// restoreSkippedLocked puts the lanes taken out by the pass back in their
// heaps.
func (b *Budget) restoreSkippedLocked() {
	for i, l := range b.skipped {
		if l.head != nil {
			l.cg.push(l)
		}
		b.skipped[i] = nil
	}
	b.skipped = b.skipped[:0]
}

// grantLocked unlinks w and, if its CAS wins, counts its permits, makes the
// grant visible and adds w to d. If its Cancel won, nothing is taken.
func (b *Budget) grantLocked(w *budgetWaiter, d *budgetDecided) {
	b.unlinkLocked(w)
	if !w.acq.decide(stateGranted, nil) {
		w.acq.settle()
		return
	}
	b.accountLocked(w.lane, w.k)
	w.acq.settle()
	d.push(w)
}

// rejectWaiterLocked unlinks w and, if its CAS wins, rejects it with err and
// adds it to d.
func (b *Budget) rejectWaiterLocked(w *budgetWaiter, err error, d *budgetDecided) {
	b.unlinkLocked(w)
	if !w.acq.decide(stateRejected, err) {
		w.acq.settle()
		return
	}
	w.acq.settle()
	d.push(w)
}

// rejectTooHeavyLocked rejects, with a *WeightError, the waiters that the
// configuration in force could never grant.
func (b *Budget) rejectTooHeavyLocked(d *budgetDecided) {
	for _, c := range b.classes {
		for w := c.head; w != nil; {
			next := w.cnext
			g := w.lane.flow.group
			if lim := b.attainableLocked(c, g); w.k > lim {
				b.rejectWaiterLocked(w, b.weightError(w.lane.flow, c, w.k, lim), d)
			}
			w = next
		}
	}
}

func (b *Budget) weightError(f *budgetFlow, c *budgetClass, k, limit int) *WeightError {
	return &WeightError{Budget: b.name, Partner: f.name, Class: c.name, Weight: k, Limit: limit}
}

// admit asks the budget for k permits of class c for a call of partner p,
// which holds its partner permits if p has a partner (k of a *Semaphore,
// else one: see BudgetPartner). w is the call's
// record when it has one already (it waited for its partner): the outcome
// then goes to w.acq, on this goroutine when decided at once, and admit
// returns nil. Without a record, admit returns the call's Acquisition: the
// shared granted or rejected ones when decided at once (nothing is
// allocated), else a new record's.
//
// A newcomer is granted at once only if nobody waits and it fits. Else, if
// its class never waits, it is granted only if the pass its arrival
// triggers grants it (NoWait otherwise); if it can wait, it is queued
// (after the queue bounds: QueueFull, or the eviction of a lower class's
// newest waiter) and the pass decides.
func (b *Budget) admit(p *BudgetPartner, c *budgetClass, k int, w *budgetWaiter) *Acquisition {
	b.mu.Lock()
	if w != nil {
		// The call's partner just granted it. If its Cancel won before this
		// critical section, its withdraw saw it waiting for the partner (or
		// will, since lane stays nil) and left the partner permits to us.
		if w.acq.cell.Load()&outcomeMask != statePending {
			b.mu.Unlock()
			w.p.partRelease(k)
			return nil
		}
		w.pa = nil
	}
	f := b.flowLocked(p)
	l := b.laneLocked(f, c)
	if w != nil {
		w.lane = l // in the budget from now on: withdraw gives the partner permits back
	}
	g := f.group
	fits := k <= g.limitAvail() && k <= b.sharedAvailLocked(c, g)
	if fits && b.waiting == 0 {
		if w != nil {
			return b.grantRecordLocked(w, l) // mu released
		}
		b.accountLocked(l, k)
		b.mu.Unlock()
		if b.events.Active() {
			b.publish(CallPermitted, 0, f, c, k, unknownWait)
		}
		return grantedAcquisition
	}
	if lim := b.attainableLocked(c, g); k > lim {
		return b.rejectNewLocked(p, l, c, k, w, b.weightError(f, c, k, lim), nil) // mu released
	}
	noWait := c.cfg.MaxWaitDuration == 0
	if noWait && !fits {
		return b.rejectNewLocked(p, l, c, k, w, c.errNoWait, c.rejectNoWait)
	}
	var d budgetDecided
	if !noWait {
		if c.waiting >= c.cfg.MaxQueuedCalls || b.waiting >= b.cfg.MaxQueuedCalls && !b.evictLocked(c, &d) {
			return b.rejectNewLocked(p, l, c, k, w, c.errQueueFull, c.rejectQueueFull)
		}
	}
	own := w == nil
	if own {
		w = &budgetWaiter{p: p, k: k}
		w.acq.owner = w
		w.lane = l
	}
	w.enq = b.sinceEpoch()
	b.enqueueLocked(w, !noWait)
	b.passLocked(&d)
	if noWait && w.linked() {
		// Not granted by the pass its arrival triggered: it may not wait.
		b.rejectWaiterLocked(w, c.errNoWait, &d)
	}
	b.mu.Unlock()
	if !own {
		b.deliver(&d)
		return nil
	}
	b.deliverBeforeReturning(&d, BudgetCall{p: p, c: c, k: k}, w)
	return &w.acq
}

// tryAdmit takes k permits of class c for partner p, whose partner permits
// the caller holds, only if they are free at once and nobody waits in the
// budget (the keyed TryAcquirePermission): it never queues and never
// evicts a waiter. It returns nil, or a *BudgetError (NoWait) or a
// *WeightError; it does not give the partner permits back.
func (b *Budget) tryAdmit(p *BudgetPartner, c *budgetClass, k int) error {
	b.mu.Lock()
	f := b.flowLocked(p)
	l := b.laneLocked(f, c)
	g := f.group
	var err error
	switch {
	case k <= g.limitAvail() && k <= b.sharedAvailLocked(c, g) && b.waiting == 0:
		b.accountLocked(l, k)
	default:
		if lim := b.attainableLocked(c, g); k > lim {
			err = b.weightError(f, c, k, lim)
		} else {
			err = c.errNoWait
		}
	}
	b.mu.Unlock()
	if b.events.Active() {
		if err == nil {
			b.publish(CallPermitted, 0, f, c, k, unknownWait)
		} else {
			b.publish(CallRejected, reasonOf(err), f, c, k, unknownWait)
		}
	}
	return err
}

// deliverBeforeReturning delivers d, the outcomes a newcomer's arrival
// decided (evictions, grants), before the newcomer's Acquisition is
// returned. If user code run by that delivery panics or calls
// runtime.Goexit, the panic goes on out of AcquirePermissionAsync, which
// then never returns the newcomer: nobody could cancel it or give its
// permits back, so it is withdrawn first (and if a grant won that race,
// its permits of both levels are given back).
func (b *Budget) deliverBeforeReturning(d *budgetDecided, call BudgetCall, w *budgetWaiter) {
	delivered := false
	defer func() {
		if !delivered && !w.acq.Cancel() && w.acq.cell.Load()&outcomeMask == stateGranted {
			call.ReleasePermission()
		}
	}()
	b.deliver(d)
	delivered = true
}

// grantRecordLocked grants the record of a call that waited for its
// partner, at once (nobody waits in the budget and it fits), and delivers
// the grant on this goroutine. mu is held and is released. If the call's
// Cancel won meanwhile, nothing is taken: its withdraw gives the partner
// permit back.
func (b *Budget) grantRecordLocked(w *budgetWaiter, l *lane) *Acquisition {
	if !w.acq.decide(stateGranted, nil) {
		b.mu.Unlock()
		return nil
	}
	b.accountLocked(l, w.k)
	w.acq.settle()
	b.mu.Unlock()
	w.enq = unknownWait // granted at once: no wait to report
	var d budgetDecided
	d.push(w)
	b.deliver(&d)
	return nil
}

// rejectNewLocked rejects a newcomer at once with err (prebuilt, a shared
// rejected Acquisition, or nil to build one). mu is held and is released;
// the partner permits are given back before the rejection is delivered.
func (b *Budget) rejectNewLocked(p *BudgetPartner, l *lane, c *budgetClass, k int, w *budgetWaiter, err error, prebuilt *Acquisition) *Acquisition {
	if w != nil {
		if !w.acq.decide(stateRejected, err) {
			b.mu.Unlock()
			return nil // cancelled meanwhile: its withdraw gives the partner permits back
		}
		w.acq.settle()
		b.mu.Unlock()
		w.enq = unknownWait // decided at once: no wait to report
		var d budgetDecided
		d.push(w)
		b.deliver(&d)
		return nil
	}
	b.mu.Unlock()
	if p.part != nil {
		p.partRelease(k)
	}
	if b.events.Active() {
		b.publish(CallRejected, reasonOf(err), l.flow, c, k, unknownWait)
	}
	if prebuilt == nil {
		prebuilt = RejectedAcquisition(err)
	}
	return prebuilt
}

// evictLocked makes room in a full budget queue for a newcomer of class c
// by evicting the newest waiter of the lowest class below c that has one.
// It reports false if no class below c has a waiter.
func (b *Budget) evictLocked(c *budgetClass, d *budgetDecided) bool {
	for i := len(b.classes) - 1; i > c.rank; i-- {
		if v := b.classes[i]; v.tail != nil {
			b.rejectWaiterLocked(v.tail, v.errEvicted, d)
			return true
		}
	}
	return false
}

// release gives back k permits of class c held by partner p's call, then
// runs a pass if anyone waits, on the calling goroutine; then the call's
// partner permits (partFinish from start if finished, else partRelease),
// also if a callback that pass runs panics. It panics, naming the budget,
// the partner and the class, if the partner holds fewer than k permits of
// c, and then gives back nothing at either level: the partner permits
// such a release would give back are other calls'.
func (b *Budget) release(p *BudgetPartner, c *budgetClass, k int, finished bool, start CallStart) {
	b.mu.Lock()
	f := b.flowLocked(p)
	var l *lane
	for _, x := range f.lanes {
		if x.cg.class == c {
			l = x
			break
		}
	}
	if l == nil || l.held < k {
		b.mu.Unlock()
		panic(fmt.Sprintf("budget %q: partner %q released more permits of class %q than it holds", b.name, f.name, c.name))
	}
	b.accountLocked(l, -k)
	if p.part != nil {
		if finished {
			defer p.partFinish(k, start)
		} else {
			defer p.partRelease(k)
		}
	}
	if b.waiting == 0 {
		b.mu.Unlock()
		if finished && b.events.Active() {
			b.publish(CallFinished, 0, f, c, k, unknownWait)
		}
		return
	}
	var d budgetDecided
	b.passLocked(&d)
	b.mu.Unlock()
	if finished {
		d.leadEvent = leadEventOf(CallFinished, f, c, k)
	}
	b.deliver(&d)
}

// reasonOf returns the Reason of a budget rejection error (0 for a
// *WeightError).
func reasonOf(err error) Reason {
	if e, ok := err.(*BudgetError); ok {
		return e.Reason
	}
	return 0
}

// unknownWait is the arrival offset of a call decided at once: its event
// reports no wait.
const unknownWait time.Duration = -1
