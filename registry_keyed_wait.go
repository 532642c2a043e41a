package bulkhead

import "context"

// AcquirePermission is the blocking form of AcquirePermissionAsync, for
// integrations that wait in the caller's goroutine (a middleware, a
// RoundTripper, an interceptor): it waits for a permit for key in the
// calling goroutine, as Semaphore.AcquirePermission does (a pooled record
// in the queue, withdrawn at once if ctx ends first), and returns the Lease
// to give it back with. The bulkhead is not evicted while the call waits
// nor while the Lease holds the permit, as for AcquirePermissionAsync,
// whose opts these are.
//
// It fails with the zero Lease and the error of Semaphore.AcquirePermission
// (a *FullError, or ctx's error), or an error naming an empty key or an
// unknown configuration; in a registry with a budget (WithBudget), also
// with the bulkhead's *TooHeavyError, the budget's *BudgetError or
// *WeightError, or an error naming a negative CallOptions.Weight, holding
// nothing at either level. It panics if ctx is nil.
func (r *Registry) AcquirePermission(ctx context.Context, key string, opts CallOptions) (Lease, error) {
	if ctx == nil {
		panic("bulkhead: Registry.AcquirePermission called with a nil context")
	}
	if key == "" {
		return Lease{}, errEmptyKeyWait
	}
	if r.budget != nil {
		return r.acquireBudgeted(ctx, key, opts)
	}
	for {
		e, err := r.cat.LookupOrCatchAll(key, opts.ConfigName)
		if err != nil {
			return Lease{}, err
		}
		if keyedFoundHook != nil {
			keyedFoundHook(e.Item())
		}
		e.Stamp()
		err = e.Item().AcquirePermission(ctx)
		if e.Dead() && !r.cat.Kept(e) { // evicted before the call reached it: undo, go again
			if err == nil {
				e.Item().ReleasePermission()
			}
			continue
		}
		e.Stamp() // the end of a wait counts as a use for the idle timeout
		if err != nil {
			return Lease{}, err
		}
		return Lease{e: e, start: e.Item().StartCall()}, nil
	}
}

// TryAcquirePermission takes a permit for key only if one is free at once
// and nobody waits (Semaphore.TryAcquirePermission): it never queues, so it
// never evicts a waiter of a LIFO queue. It returns the Lease, or the zero
// Lease and a *FullError (NoWait) naming the bulkhead that had none, or an
// error naming an empty key or an unknown configuration; in a registry
// with a budget (WithBudget), also the errors AcquirePermission lists for
// one (the budget's *BudgetError is NoWait). opts are as for
// AcquirePermissionAsync.
func (r *Registry) TryAcquirePermission(key string, opts CallOptions) (Lease, error) {
	if key == "" {
		return Lease{}, errEmptyKeyTry
	}
	if r.budget != nil {
		return r.tryAcquireBudgeted(key, opts)
	}
	for {
		e, err := r.cat.LookupOrCatchAll(key, opts.ConfigName)
		if err != nil {
			return Lease{}, err
		}
		if keyedFoundHook != nil {
			keyedFoundHook(e.Item())
		}
		e.Stamp()
		ok := e.Item().TryAcquirePermission()
		if e.Dead() && !r.cat.Kept(e) { // evicted before the call reached it: undo, go again
			if ok {
				e.Item().ReleasePermission()
			}
			continue
		}
		if !ok {
			return Lease{}, &FullError{Name: e.Name(), Reason: NoWait}
		}
		return Lease{e: e, start: e.Item().StartCall()}, nil
	}
}
