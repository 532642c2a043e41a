package redis

import (
	"errors"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/catalog"
)

// Acquire requests a fleet permit for key without blocking, from the
// bulkhead of key (created from its configuration, see WithKeyConfig, on
// first use or after an eviction) or, if key has no bulkhead and
// WithMaxBulkheads is reached or key is longer than WithMaxKeyLength, from
// the catch-all. It returns the Permit: its
// Acquisition (outcome, callbacks, Cancel), its Lease once granted, and
// Finish and Release to give the permit back with.
//
// The call holds its bulkhead from this lookup until its outcome is a
// rejection or a cancellation (the registry lets go then, before the
// Acquisition's OnDone callbacks registered by the caller run) or, after a
// grant, until the Permit's Finish or Release. So a key never has two
// bulkheads admitting at once in this process, no bulkhead is evicted
// while it holds a lease or a ticket, and no permit is lost to an
// eviction.
//
// opts are as for the core Registry's keyed calls: opts.ConfigName names
// the configuration to create key's bulkhead from if it has none ("": the
// one WithKeyConfig picks, or the defaults); an existing bulkhead is used
// as it is. An empty key, or a configuration that is unknown, yields a
// Permit already rejected with an error naming it (Name ""), except that a
// key the catch-all admits (see above) goes there whatever opts names.
func (r *Registry) Acquire(key string, opts bulkhead.CallOptions) *Permit {
	if key == "" {
		return rejectedPermit(errEmptyKey)
	}
	e, err := r.cat.EnterOrCatchAll(key, opts.ConfigName)
	if err != nil {
		return rejectedPermit(err)
	}
	return r.acquireEntered(e)
}

var errEmptyKey = errors.New("redis: Registry.Acquire: key must not be empty")

// acquireEntered acquires through e, which the caller entered.
func (r *Registry) acquireEntered(e *catalog.Entry[*Bulkhead]) *Permit {
	p := e.Item().acquire(true)
	p.hold.Store(e)
	// Registered before the caller sees p, so it runs before the caller's
	// callbacks (at once, here, if the outcome is already known). A grant
	// keeps the hold until Finish or Release; a grant that loses to Cancel
	// is given back inside the bulkhead and ends here too.
	p.a.OnDone(func(err error) {
		if err != nil {
			p.leave()
		}
	})
	return p
}

// rejectedPermit is the Permit of a keyed call rejected before it reached
// a bulkhead.
func rejectedPermit(err error) *Permit {
	return &Permit{a: bulkhead.RejectedAcquisition(err), state: stDone, typed: true}
}

// leave ends p's hold on its registry entry, once.
func (p *Permit) leave() {
	if e := p.hold.Swap(nil); e != nil {
		e.Leave()
	}
}

// armSweepLocked arms the sweep timer if eviction is on and none is pending.
func (r *Registry) armSweepLocked() {
	if r.idle <= 0 {
		return
	}
	r.createdSince = true
	if !r.sweepArmed {
		r.sweepArmed = true
		r.s.cfg.Clock.AfterFunc(r.idle/2, r.sweep)
	}
}

// idleTicks is how many sweeps (idle/2 apart) an entry must have had no
// user for: 2 sweep periods = idle.
const idleTicks = 2

// sweep is the timer's callback: it evicts idle bulkheads and re-arms
// itself while unpinned bulkheads remain or were created meanwhile, until
// the Store closes.
func (r *Registry) sweep() {
	if r.s.closed.Load() {
		r.cat.Lock()
		r.sweepArmed = false
		r.cat.Unlock()
		return
	}
	swept := false
	defer func() {
		if !swept {
			// An OnEvict listener called runtime.Goexit, ending this
			// goroutine within Sweep (which released the lock): sweep
			// again later, or no bulkhead would ever be evicted again.
			r.cat.Lock()
			r.s.cfg.Clock.AfterFunc(r.idle/2, r.sweep)
			r.cat.Unlock()
		}
	}()
	unpinned := r.cat.Sweep(idleTicks, busy, r.evictedLocked)
	swept = true
	r.cat.Lock()
	defer r.cat.Unlock()
	if unpinned > 0 || r.createdSince {
		r.createdSince = false
		r.s.cfg.Clock.AfterFunc(r.idle/2, r.sweep)
		return
	}
	r.sweepArmed = false
}

// busy reports whether b holds a permit or queues a call in this process.
// With no user of its entry that cannot be (every permit and wait of an
// unpinned bulkhead is a keyed call's); the sweep checks it anyway, under
// the catalog's lock, and keeps a busy bulkhead rather than trust the
// count.
func busy(b *Bulkhead) bool {
	m := b.Metrics()
	return m.InFlightCalls != 0 || m.QueuedCalls != 0
}

// evictedLocked takes an evicted bulkhead out of the Store, unsubscribes
// the registry's listeners from it and tells the OnEvict listeners.
func (r *Registry) evictedLocked(name string, b *Bulkhead) {
	b.retire()
	r.fan.EvictedLocked(name, b)
}
