package bulkhead

import (
	"context"
	"errors"
	"fmt"
)

// WithBudget joins every bulkhead the registry creates (the catch-all
// included) to b, as Budget.Partner does: a keyed call then takes
// CallOptions.Weight permits of its key's bulkhead and then as many of b,
// of class CallOptions.Class, and its Lease gives both back (see docs/guide.md,
// "The hub budget"). partner returns the PartnerOptions of key's bulkhead
// (its group, and the class of its calls that name none); nil joins every
// bulkhead with the zero PartnerOptions (no group, b's DefaultClass). To
// take the group from the bulkhead's configuration, map the key as
// WithKeyConfig's func does.
//
// partner runs when the registry creates key's bulkhead, under the
// registry's lock: it must be quick and must not call into the registry.
// If it panics, the call that was creating the bulkhead panics, holding
// nothing and creating nothing; if it names a group or class b does not
// have, that call fails with the *ConfigError of Budget.Partner.
//
// The partners of bulkheads the registry evicts (WithIdleTimeout) or
// removes are dropped from b once idle (no permit held, no call waiting),
// so b keeps state for at most as many partners as the registry has
// bulkheads, however many keys callers send (BudgetMetrics.Partners).
// Calls through a *Semaphore from Get, Find or Configure take no budget
// permit: only the keyed path is budgeted. A keyed call of weight k takes k
// permits of its bulkhead too (Semaphore.Call's weighted path), so a weight
// above the bulkhead's MaxConcurrentCalls fails the call with a
// *TooHeavyError before the budget is asked.
//
// A nil b makes NewRegistry fail.
func WithBudget(b *Budget, partner func(key string) PartnerOptions) RegistryOption {
	return registryOptionFunc(func(r *Registry) {
		if b == nil {
			r.setOptErr(errors.New("bulkhead: NewRegistry: WithBudget: budget must not be nil"))
			return
		}
		r.budget, r.partnerOf = b, partner
	})
}

// Budget returns the budget of WithBudget, or nil.
func (r *Registry) Budget() *Budget { return r.budget }

// joinBudget joins s, the new bulkhead of name, to the registry's budget,
// before anyone can see it. It runs under the catalog's lock (or before
// the registry is shared).
func (r *Registry) joinBudget(name string, s *Semaphore) error {
	if r.budget == nil {
		return nil
	}
	var opts PartnerOptions
	if r.partnerOf != nil {
		opts = r.partnerOf(name)
	}
	p, err := r.budget.Partner(s, opts)
	if err != nil {
		return err
	}
	r.partners.Store(s, p)
	return nil
}

// leaveBudgetLocked forgets the partner of s, a bulkhead that is gone from
// the catalog, and drops its flow from the budget if it is idle: after an
// eviction it always is (the bulkhead had no permit held and no call
// queued, and a budgeted call holds its bulkhead's permit for as long as
// it waits for or holds the budget's). A removed bulkhead's flow that is
// still in use stays, and is shared by the next bulkhead of that name.
func (r *Registry) leaveBudgetLocked(name string, s *Semaphore) {
	if r.budget == nil {
		return
	}
	r.partners.Delete(s)
	r.budget.dropIdleFlow(name)
}

// errPartnerGone is budgetCall's answer for a bulkhead already gone from
// the catalog: look the key up again.
var errPartnerGone = errors.New("bulkhead: the bulkhead left the registry")

// budgetCall returns the BudgetCall of a keyed call on s: its partner, the
// class opts names (the partner's class if none, or one the budget does
// not have) and its weight. Weight 1 allocates nothing; a heavier call
// allocates its BudgetCall (24 bytes), which its Lease points to.
func (r *Registry) budgetCall(s *Semaphore, opts CallOptions, where string) (*BudgetCall, error) {
	v, ok := r.partners.Load(s)
	if !ok {
		return nil, errPartnerGone
	}
	if keyedFoundHook != nil {
		keyedFoundHook(s)
	}
	p := v.(*BudgetPartner)
	c := p.class
	if opts.Class != "" {
		if x := r.budget.classNamed(opts.Class); x != nil {
			c = x
		}
	}
	k := opts.Weight
	switch {
	case k == 0:
		k = 1
	case k < 0:
		return nil, fmt.Errorf("bulkhead: Registry.%s: CallOptions.Weight must not be negative, got %d", where, k)
	}
	return p.callRef(c, k), nil
}

// acquireAsyncBudgeted is AcquirePermissionAsync in a registry with a
// budget: the key's bulkhead first (with the fenced path's undo, see
// AcquirePermissionAsync), then the budget, as one Acquisition
// (BudgetCall.AcquirePermissionAsync). The bulkhead's permit is held, or
// its queue holds the call, until the budget grants or rejects it, so the
// bulkhead is busy, and not evicted, while the call waits in the budget.
func (r *Registry) acquireAsyncBudgeted(key string, opts CallOptions) (*Acquisition, Lease) {
	for {
		e, err := r.cat.LookupOrCatchAll(key, opts.ConfigName)
		if err != nil {
			return RejectedAcquisition(err), Lease{}
		}
		s := e.Item()
		call, err := r.budgetCall(s, opts, "AcquirePermissionAsync")
		if err == errPartnerGone {
			continue
		}
		if err != nil {
			return RejectedAcquisition(err), Lease{}
		}
		e.Stamp()
		pa := call.p.partAcquireAsync(call.k) // p's bulkhead is s
		if e.Dead() && !r.cat.Kept(e) {
			undoAsync(pa, func() { call.p.partRelease(call.k) })
			continue
		}
		a := call.afterPartner(pa)
		switch a.Err() {
		case nil:
			return a, Lease{e: e, start: s.StartCall(), bc: call}
		case ErrPending:
			a.OnDone(func(error) { e.Stamp() })
			return a, Lease{e: e, a: a, bc: call}
		default:
			return a, Lease{}
		}
	}
}

// acquireBudgeted is AcquirePermission in a registry with a budget: the
// key's bulkhead's permit, waited for in the calling goroutine, then the
// budget's (BudgetCall.AcquirePermission's wait). A call the budget
// rejects, or whose ctx ends while it waits for the budget, gives the
// bulkhead's permit back.
func (r *Registry) acquireBudgeted(ctx context.Context, key string, opts CallOptions) (Lease, error) {
	for {
		e, err := r.cat.LookupOrCatchAll(key, opts.ConfigName)
		if err != nil {
			return Lease{}, err
		}
		s := e.Item()
		call, err := r.budgetCall(s, opts, "AcquirePermission")
		if err == errPartnerGone {
			continue
		}
		if err != nil {
			return Lease{}, err
		}
		e.Stamp()
		err = SemaphoreCall{s: s, k: call.k}.AcquirePermission(ctx) // k = 1: s.AcquirePermission
		if e.Dead() && !r.cat.Kept(e) {
			if err == nil {
				call.p.partRelease(call.k)
			}
			continue
		}
		if err != nil {
			e.Stamp()
			return Lease{}, err
		}
		// This goroutine holds s's call.k permits; admit takes them on (and
		// gives them back if the budget rejects the call or it is withdrawn).
		err = call.await(ctx, r.budget.admit(call.p, call.c, call.k, nil))
		e.Stamp()
		if err != nil {
			return Lease{}, err
		}
		return Lease{e: e, start: s.StartCall(), bc: call}, nil
	}
}

// tryAcquireBudgeted is TryAcquirePermission in a registry with a budget:
// the call's permits of each level only if both are free at once and
// nobody waits for either; a weight above the bulkhead's
// MaxConcurrentCalls fails with its *TooHeavyError.
func (r *Registry) tryAcquireBudgeted(key string, opts CallOptions) (Lease, error) {
	for {
		e, err := r.cat.LookupOrCatchAll(key, opts.ConfigName)
		if err != nil {
			return Lease{}, err
		}
		s := e.Item()
		call, err := r.budgetCall(s, opts, "TryAcquirePermission")
		if err == errPartnerGone {
			continue
		}
		if err != nil {
			return Lease{}, err
		}
		e.Stamp()
		ok := call.p.partTryAcquire(call.k) // p's bulkhead is s
		if e.Dead() && !r.cat.Kept(e) {
			if ok {
				call.p.partRelease(call.k)
			}
			continue
		}
		if !ok {
			if limit := s.Config().MaxConcurrentCalls; call.k > 1 && call.k > limit {
				return Lease{}, &TooHeavyError{Name: e.Name(), Weight: call.k, Limit: limit}
			}
			return Lease{}, &FullError{Name: e.Name(), Reason: NoWait}
		}
		if err := r.budget.tryAdmit(call.p, call.c, call.k); err != nil {
			call.p.partRelease(call.k)
			return Lease{}, err
		}
		return Lease{e: e, start: s.StartCall(), bc: call}, nil
	}
}

// finishBoth gives back a budgeted keyed call's permits: the budget's
// first, then the bulkhead's (even if a callback the budget's release runs
// panics), as BudgetCall.FinishCall does, as many of each as the call's
// weight, the bulkhead's CallFinished measured from start.
func finishBoth(bc *BudgetCall, start CallStart) {
	bc.p.b.release(bc.p, bc.c, bc.k, true, start)
}
