package bulkhead

import (
	"context"
	"fmt"
)

// BudgetPartner is a partner's place in a Budget (Budget.Partner, or
// Budget.Flow for calls that need the budget only). It is a Bulkhead for
// both levels at once: its calls are of the partner's class (see
// PartnerOptions.Class) and weight 1; Call gives one for another class or
// weight. It is safe for concurrent use.
//
// A call of weight k takes k permits of the budget and, if the partner's
// bulkhead is a *Semaphore, k permits of it too, through the Semaphore's
// weighted path (Semaphore.Call): at once or not at all, in its queue with
// bounded bypass, and a *TooHeavyError if k is above its
// MaxConcurrentCalls. A partner bulkhead of any other type has no weights:
// a call takes one permit of it whatever its weight.
type BudgetPartner struct {
	b    *Budget
	name string
	// flow is the partner's state in the budget, guarded by Budget.mu: a
	// flow dropped while idle (Budget.dropIdleFlow, for a Registry's
	// evicted bulkhead) is replaced by Budget.flowLocked on next use.
	flow *budgetFlow
	part Bulkhead // the partner's own bulkhead; nil for a Flow
	// sem is part if it is a *Semaphore (else nil): a call of weight k
	// takes k of its permits (partAcquireAsync, partTryAcquire) and gives k
	// back (partRelease, partFinish); any other partner bulkhead, one.
	sem   *Semaphore
	class *budgetClass // the class of calls that name none
	// units holds the partner's calls of weight 1, one per class by
	// budgetClass.id (the classes the budget had when the partner joined),
	// so that a keyed Lease can point to one without allocating (callRef).
	units []BudgetCall
}

// callRef returns a BudgetCall of class c and weight k that stays valid:
// one of p.units for weight 1, else a new one.
func (p *BudgetPartner) callRef(c *budgetClass, k int) *BudgetCall {
	if k == 1 && c.id < len(p.units) {
		return &p.units[c.id]
	}
	return &BudgetCall{p: p, c: c, k: k}
}

// Name returns the partner's name (its bulkhead's).
func (p *BudgetPartner) Name() string { return p.name }

// Budget returns the budget p belongs to.
func (p *BudgetPartner) Budget() *Budget { return p.b }

// Bulkhead returns the partner's own bulkhead, nil for a Flow.
func (p *BudgetPartner) Bulkhead() Bulkhead { return p.part }

// Call returns the Bulkhead of p's calls of class c (the zero Class: p's
// class) and weight permits of the budget, and weight permits of the
// partner's bulkhead too if it is a *Semaphore (one of any other
// bulkhead; none for a Flow). It panics if weight is below 1 or c is a
// class of another budget. A weight above the partner's
// MaxConcurrentCalls is not a panic (the limit may change): such a call
// is rejected when it acquires, with the partner's *TooHeavyError, before
// the budget is asked.
func (p *BudgetPartner) Call(c Class, weight int) BudgetCall {
	if weight < 1 {
		panic(fmt.Sprintf("bulkhead: BudgetPartner.Call: weight %d must be >= 1", weight))
	}
	cl := p.class
	if c.c != nil {
		if c.c.b != p.b {
			panic(fmt.Sprintf("bulkhead: BudgetPartner.Call: class %q belongs to budget %q, not %q", c.c.name, c.c.b.name, p.b.name))
		}
		cl = c.c
	}
	return BudgetCall{p: p, c: cl, k: weight}
}

// AcquirePermissionAsync is Call(Class{}, 1).AcquirePermissionAsync.
func (p *BudgetPartner) AcquirePermissionAsync() *Acquisition {
	return BudgetCall{p: p, c: p.class, k: 1}.AcquirePermissionAsync()
}

// AcquirePermission is Call(Class{}, 1).AcquirePermission.
func (p *BudgetPartner) AcquirePermission(ctx context.Context) error {
	return BudgetCall{p: p, c: p.class, k: 1}.AcquirePermission(ctx)
}

// ReleasePermission is Call(Class{}, 1).ReleasePermission.
func (p *BudgetPartner) ReleasePermission() { BudgetCall{p: p, c: p.class, k: 1}.ReleasePermission() }

// FinishCall is Call(Class{}, 1).FinishCall.
func (p *BudgetPartner) FinishCall() { BudgetCall{p: p, c: p.class, k: 1}.FinishCall() }

// BudgetCall is the Bulkhead (and BlockingBulkhead) of a partner's calls of
// one class and weight (BudgetPartner.Call): Weight permits of the
// partner's bulkhead if it is a *Semaphore (one of any other bulkhead),
// then Weight permits of the budget. Its permits go back with its own
// FinishCall or ReleasePermission (same class and weight), at both levels
// exactly what was taken. It is a small value: make one per call, or keep
// one per kind of call. The zero BudgetCall is not usable.
type BudgetCall struct {
	p *BudgetPartner
	c *budgetClass
	k int
}

// Name returns the partner's name.
func (c BudgetCall) Name() string { return c.p.name }

// Class returns the call's class.
func (c BudgetCall) Class() Class { return Class{c.c} }

// Weight returns the budget permits the call takes (and the partner
// permits, if its partner's bulkhead is a *Semaphore).
func (c BudgetCall) Weight() int { return c.k }

// AcquirePermissionAsync asks for the partner's permits, then for the
// budget's, without blocking, and returns one Acquisition for both.
//
// Granted at once by both levels, it returns the shared granted
// Acquisition and allocates nothing. A call that queued at its partner
// comes back as a record, also when it was granted before this method
// returned. Rejected at once by the partner, it
// returns the partner's Acquisition (its *FullError, or its *TooHeavyError
// for a weight above its MaxConcurrentCalls: the budget is not asked);
// rejected by the budget, the partner's permits are given back first and
// the error is a
// *BudgetError (errors.Is ErrBulkheadFull) or a *WeightError. Otherwise the
// call waits, as one record, for its partner and then in the budget, and
// the returned Acquisition is decided when both have granted it (its
// callbacks then run on the goroutine whose permit granted it last), or
// when either level rejects it. Cancel withdraws it from whichever level it
// waits for; no permit of either level is kept by a withdrawn or rejected
// call (docs/design.md, "One decision per record, and who owns each
// permit").
func (c BudgetCall) AcquirePermissionAsync() *Acquisition {
	p := c.p
	if p.part == nil {
		return p.b.admit(p, c.c, c.k, nil)
	}
	return c.afterPartner(p.partAcquireAsync(c.k))
}

// partAcquireAsync asks p's bulkhead for the permits of a call of weight
// k: k of a *Semaphore (its weighted path; its own method for k = 1, so
// that a call of weight 1 costs what the Semaphore's AcquirePermissionAsync
// costs, and two compares), one of any other bulkhead.
func (p *BudgetPartner) partAcquireAsync(k int) *Acquisition {
	switch {
	case p.sem == nil:
		return p.part.AcquirePermissionAsync()
	case k == 1:
		return p.sem.AcquirePermissionAsync()
	}
	return SemaphoreCall{s: p.sem, k: k}.AcquirePermissionAsync()
}

// partTryAcquire is partAcquireAsync without waiting, for a partner whose
// bulkhead is a *Semaphore (a Registry's are; Bulkhead has no try): it
// takes the permits of a call of weight k if they are free and nobody
// waits, and reports whether it did.
func (p *BudgetPartner) partTryAcquire(k int) bool {
	if k == 1 {
		return p.sem.TryAcquirePermission()
	}
	return SemaphoreCall{s: p.sem, k: k}.TryAcquirePermission()
}

// partRelease gives back to p's bulkhead what partAcquireAsync(k) took,
// without an event (the call did not run).
func (p *BudgetPartner) partRelease(k int) {
	if k > 1 && p.sem != nil {
		p.sem.releaseN(k)
		return
	}
	p.part.ReleasePermission()
}

// partFinish gives back to p's bulkhead what partAcquireAsync(k) took,
// with its CallFinished, whose CallDuration a *Semaphore measures from
// start (the zero CallStart: none; see FinishCallStarted).
func (p *BudgetPartner) partFinish(k int, start CallStart) {
	switch {
	case p.sem == nil:
		p.part.FinishCall()
	case k == 1:
		p.sem.FinishCallStarted(start)
	default:
		SemaphoreCall{s: p.sem, k: k}.FinishCallStarted(start)
	}
}

// afterPartner takes the call on from pa, its partner's acquisition (just
// returned by the partner's AcquirePermissionAsync): to the budget at once
// if the partner granted it at once, as one record waiting for the partner
// and then for the budget if pa is a record (pending, or granted by
// another goroutine's release since it was returned); pa itself if the
// partner rejected it.
//
// A *Semaphore's record that is already granted goes the record's way
// (registerPartnerDone takes it to the budget inline): the shared granted
// Acquisition means that both levels granted the call at once, on the
// caller's goroutine, with nobody waiting at the partner. Taking such a
// record to the budget as a newcomer would return the shared granted
// Acquisition for a call that queued at its partner (the linearizability
// model of both levels refused such histories).
func (c BudgetCall) afterPartner(pa *Acquisition) *Acquisition {
	p := c.p
	switch err := pa.Err(); {
	case err == nil && (pa == grantedAcquisition || p.sem == nil):
		return p.b.admit(p, c.c, c.k, nil)
	case err == nil || err == ErrPending:
	default:
		return pa
	}
	w := &budgetWaiter{p: p, class: c.c, pa: pa, k: c.k}
	w.acq.owner = w
	if afterPartnerPending != nil {
		afterPartnerPending(pa)
	}
	c.registerPartnerDone(w, pa)
	return &w.acq
}

// afterPartnerPending, if set (by tests, before any Budget is used), runs
// between the check that the partner's acquisition is pending and the
// registration of partnerDone on it. It costs one load on that path.
var afterPartnerPending func(pa *Acquisition)

// registerPartnerDone registers partnerDone on the partner's acquisition.
// If that was decided meanwhile, partnerDone runs here, inline, takes the
// call to the budget and delivers what the budget decided, all before the
// call's Acquisition is returned; if user code run by that delivery panics
// or calls runtime.Goexit, nobody will ever hold the call, so it is
// withdrawn first (and if a grant won that race, both its permits are
// given back), as a newcomer of admit is.
func (c BudgetCall) registerPartnerDone(w *budgetWaiter, pa *Acquisition) {
	registered := false
	defer func() {
		if !registered && !w.acq.Cancel() && w.acq.cell.Load()&outcomeMask == stateGranted {
			c.ReleasePermission()
		}
	}()
	pa.OnDone(w.partnerDone)
	registered = true
}

// partnerDone runs once with the outcome of the partner's acquisition, on
// the goroutine that decided it: it is the one place that handles the
// partner's outcome. A rejection rejects the call (unless its Cancel won,
// which is then the partner's ErrCancelled); a grant takes the call on to
// the budget, where admit gives the permit back if the call's Cancel won
// meanwhile (see budgetWaiter.withdraw for the other side of that race).
func (w *budgetWaiter) partnerDone(err error) {
	if err != nil {
		if w.acq.decide(stateRejected, err) {
			w.acq.settle()
			w.acq.runCallbacks()
		}
		return
	}
	w.p.b.admit(w.p, w.class, w.k, w)
}

// AcquirePermission blocks until both levels grant the call (nil), either
// rejects it, or ctx ends (ctx.Err(); the call is withdrawn, and a grant
// that raced it is given back). It panics if ctx is nil.
func (c BudgetCall) AcquirePermission(ctx context.Context) error {
	if ctx == nil {
		panic("bulkhead: BudgetCall.AcquirePermission called with a nil context")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.await(ctx, c.AcquirePermissionAsync())
}

// await waits for a, the call's acquisition, as AcquirePermission
// describes.
func (c BudgetCall) await(ctx context.Context, a *Acquisition) error {
	if err := a.Err(); err != ErrPending {
		return err
	}
	select {
	case <-a.Done():
		return a.Err()
	case <-ctx.Done():
		if a.Cancel() {
			return ctx.Err()
		}
		<-a.Done()
		if a.Err() == nil {
			c.ReleasePermission()
			return ctx.Err()
		}
		return a.Err()
	}
}

// ReleasePermission gives back the permits of a call that did not run: the
// budget's first, then the partner's (no CallFinished), as many of each as
// the call took. Waiters granted by them have their callbacks run as for
// any release (see Acquisition.OnDone); the partner's permits go back even
// if one of them panics. It panics, naming the budget, the partner and the
// class, if the partner holds fewer budget permits of the class than the
// call's weight (a call given back twice, or with a larger weight than it
// took), and then gives back nothing at either level, so that the partner
// permits of the partner's other calls stay theirs. A BudgetCall is a
// value with no record of its own call: a release that other calls of the
// same partner and class still cover cannot be told from theirs, and is
// not refused (as for a Semaphore's permits).
func (c BudgetCall) ReleasePermission() {
	c.p.b.release(c.p, c.c, c.k, false, CallStart{})
}

// FinishCall gives back the permits of a call that ran, as
// ReleasePermission does (and panics as it does), with a CallFinished
// event at both levels.
func (c BudgetCall) FinishCall() {
	c.p.b.release(c.p, c.c, c.k, true, CallStart{})
}

// Compile-time checks.
var (
	_ Bulkhead         = (*BudgetPartner)(nil)
	_ BlockingBulkhead = (*BudgetPartner)(nil)
	_ Bulkhead         = BudgetCall{}
	_ BlockingBulkhead = BudgetCall{}
)
