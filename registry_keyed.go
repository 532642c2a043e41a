package bulkhead

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rxbulkhead/bulkhead/internal/catalog"
)

// ErrRegistryFull is wrapped by the error of Get, GetWithConfig and
// Configure when the registry already holds WithMaxBulkheads bulkheads and
// the name is not one of them. Keyed calls never see it: they go to the
// catch-all.
var ErrRegistryFull = errors.New("registry is full")

// CatchAllName is the name of the catch-all bulkhead of a registry with
// WithMaxBulkheads: keyed calls whose key has no bulkhead once the cap is
// reached share it, and so do keyed calls whose key is CatchAllName itself.
// Get(CatchAllName) returns it.
const CatchAllName = "catch-all"

// WithIdleTimeout makes the registry evict a bulkhead that has had no keyed
// call in progress (none waiting, none holding a permit) for idle: it is
// dropped with its listeners' subscriptions (and its metric series), and
// the next keyed call for its key creates it again from its configuration,
// with full permits. Bulkheads handed out by Get, GetWithConfig, Find or
// Configure are pinned and never evicted.
//
// An idle bulkhead is evicted between idle and 1.5 idle after its last
// keyed call ended: one sweep per registry runs every idle/2 on the
// registry's Clock (WithSemaphoreOptions(WithClock(c))), only while the
// registry holds unpinned bulkheads; it runs on the Clock's timer goroutine
// (testkit.VirtualClock: the caller of Advance) and costs one pass over the
// bulkheads. The keyed fast path reads no clock. idle must be positive;
// NewRegistry fails otherwise.
func WithIdleTimeout(idle time.Duration) RegistryOption {
	return registryOptionFunc(func(r *Registry) {
		if idle <= 0 {
			r.setOptErr(fmt.Errorf("bulkhead: NewRegistry: WithIdleTimeout: idle timeout must be positive, got %v", idle))
			return
		}
		r.idle = idle
	})
}

// WithMaxBulkheads caps the number of bulkheads at max (the catch-all not
// counted). Once it is reached, a keyed call whose key has no bulkhead is
// admitted by the catch-all bulkhead, named CatchAllName and configured
// with catchAll, which all such keys share (as the catch-all flow of
// Kubernetes' API Priority and Fairness): a flood of new keys competes for
// the catch-all's permits, never for those of the keys that already have a
// bulkhead, and never goes unlimited. Get, GetWithConfig and Configure of a
// new name fail with ErrRegistryFull instead, since they promise a
// bulkhead of that name. Combine it with WithIdleTimeout, or the cap, once
// reached, stays reached. A key longer than the registry's maximum key
// length (WithMaxKeyLength, DefaultMaxKeyLength by default) that has no
// bulkhead goes to the catch-all too, so that long keys cannot grow the
// registry by their length. max must be at least 1 and catchAll valid;
// NewRegistry fails otherwise.
func WithMaxBulkheads(max int, catchAll Config) RegistryOption {
	return registryOptionFunc(func(r *Registry) {
		if max < 1 {
			r.setOptErr(fmt.Errorf("bulkhead: NewRegistry: WithMaxBulkheads: max must be at least 1, got %d", max))
			return
		}
		if err := catchAll.validateFor(CatchAllName); err != nil {
			r.setOptErr(err)
			return
		}
		r.max, r.catchAll = max, &catchAll
	})
}

// DefaultMaxKeyLength is the length in bytes of the longest key that gets
// a bulkhead of its own in a registry with WithMaxBulkheads, unless
// WithMaxKeyLength says otherwise.
const DefaultMaxKeyLength = 256

// WithMaxKeyLength sets the length in bytes of the longest key a keyed call
// creates a bulkhead for in a registry with WithMaxBulkheads (default
// DefaultMaxKeyLength): a longer key that has no bulkhead is admitted by the
// catch-all (and counted in RegistryStats.CatchAllCalls), so a flood of
// long keys (a megabyte header) holds at most max bulkheads of bounded size.
// Bulkheads created with Get or Configure are not bound by it. n must be at
// least 1, and the option needs WithMaxBulkheads; NewRegistry fails
// otherwise.
func WithMaxKeyLength(n int) RegistryOption {
	return registryOptionFunc(func(r *Registry) {
		if n < 1 {
			r.setOptErr(fmt.Errorf("bulkhead: NewRegistry: WithMaxKeyLength: length must be at least 1, got %d", n))
			return
		}
		r.maxKeyLen = n
	})
}

// WithKeyConfig makes a keyed call that names no configuration
// (CallOptions.ConfigName "") create the bulkhead of key from the
// configuration named configName(key) rather than from the defaults.
// configName runs on the calling goroutine, without any lock of the
// registry, when a keyed call finds no live bulkhead for key (so it may
// run more than once for one creation, and never once the cap of
// WithMaxBulkheads sends key to the catch-all); it may call into the
// registry. If it panics, the keyed call panics, holding nothing. A name
// it returns that is not a known configuration fails the call with an
// error naming it. A nil configName makes NewRegistry fail.
func WithKeyConfig(configName func(key string) string) RegistryOption {
	return registryOptionFunc(func(r *Registry) {
		if configName == nil {
			r.setOptErr(errors.New("bulkhead: NewRegistry: WithKeyConfig: configName func must not be nil"))
			return
		}
		r.keyConfig = configName
	})
}

func (r *Registry) setOptErr(err error) {
	if r.optErr == nil {
		r.optErr = err
	}
}

// CallOptions are the options of one keyed call (Registry.AcquirePermission,
// TryAcquirePermission, AcquirePermissionAsync). The zero value asks for the
// registry's choices, and every field's zero value means "as the registry
// decides", so a field added later changes nothing for callers that do not
// set it. CallOptions are passed by value: setting them costs no
// allocation.
type CallOptions struct {
	// ConfigName names the configuration to create the key's bulkhead from
	// if it has none (on first use or after an eviction); an existing
	// bulkhead is used as it is. "" leaves the choice to the registry:
	// WithKeyConfig's func, or the defaults. A name that is not a known
	// configuration fails the call with an error naming it.
	ConfigName string
	// Class names the budget class of the call in a registry with a budget
	// (WithBudget); "" is the class of the key's partner (the PartnerOptions
	// of WithBudget's func). A name the budget has no class of falls back
	// to the partner's class too, so that a class name from the wire (see
	// WithPriority) can neither fail a call nor create state. Without a
	// budget it is ignored.
	Class string
	// Weight is the number of permits the call takes in a registry with a
	// budget, of its key's bulkhead (as Semaphore.Call) and of the budget;
	// 0 means 1. A negative weight fails the call with an error naming it;
	// a weight above the bulkhead's MaxConcurrentCalls fails it with a
	// *TooHeavyError, and one above what the call's class and group can
	// ever hold in the budget with a *WeightError. Without a budget it is
	// ignored.
	Weight int
}

// Lease is one keyed call's hold on the bulkhead that admitted it (the
// key's own, or the catch-all). While a Lease holds a permit, that bulkhead
// is not evicted. After a grant, give the permit back exactly once,
// through the Lease: FinishCall if the call ran, ReleasePermission if it
// did not. Either empties the Lease, so that giving it back twice through
// the same Lease panics instead of returning a permit some other call
// holds; so does giving back through the Lease of an AcquirePermissionAsync
// call that was not granted (still waiting, rejected or cancelled). A copy
// of a Lease is the same hold: give back through one of the copies only
// (the registry cannot tell two copies apart).
type Lease struct {
	e *catalog.Entry[*Semaphore]
	// a is the Acquisition of a call that was queued (nil for a call
	// granted at once): the Lease holds a permit only once a is granted.
	a *Acquisition
	// start is the call's start, for the CallDuration of its CallFinished
	// (see StartCall).
	start CallStart
	// bc is the call's part in the registry's budget (WithBudget): its
	// partner, class and weight; nil without a budget. A pointer, so that
	// a Lease without a budget stays four words.
	bc *BudgetCall
}

// Name is the name of the bulkhead that admitted the call: the key, or
// CatchAllName. It is "" for the zero Lease of a failed call, and once the
// permit is given back.
func (l *Lease) Name() string {
	if l.e == nil {
		return ""
	}
	return l.e.Name()
}

// FinishCall gives back a permit whose call ran (CallFinished event, with
// the call's duration: see StartCall) and empties the Lease. It panics on
// a Lease that holds no permit: the zero Lease of a failed call, one
// already given back, or one whose call was not granted.
func (l *Lease) FinishCall() {
	e, start, bc := l.e, l.start, l.bc
	if e == nil || l.a != nil && !l.a.Granted() {
		l.misuse("FinishCall")
	}
	*l = Lease{}
	e.Stamp() // before the permit goes: the bulkhead is idle from now on
	if bc != nil {
		finishBoth(bc, start)
		return
	}
	e.Item().FinishCallStarted(start)
}

// ReleasePermission gives back a permit that was granted but not used (no
// event) and empties the Lease. It panics as FinishCall does.
func (l *Lease) ReleasePermission() {
	e, bc := l.e, l.bc
	if e == nil || l.a != nil && !l.a.Granted() {
		l.misuse("ReleasePermission")
	}
	*l = Lease{}
	e.Stamp()
	if bc != nil {
		bc.ReleasePermission() // its partner is e's bulkhead
		return
	}
	e.Item().ReleasePermission()
}

// misuse panics for a give-back through a Lease that holds no permit.
func (l *Lease) misuse(what string) {
	if l.e == nil {
		panic("bulkhead: Lease." + what + " on a Lease that holds no permit (the zero Lease of a failed call, or a Lease already given back)")
	}
	panic("bulkhead: Lease." + what + " on the Lease of a call that was not granted (it waits, or was rejected or cancelled: " + l.a.Err().Error() + ")")
}

// AcquirePermissionAsync requests a permit for key without blocking, from
// the bulkhead of key (created from its configuration, see CallOptions, on
// first use or after an eviction) or, once WithMaxBulkheads is reached and
// key has no bulkhead, from the catch-all. It returns the Acquisition (its
// outcome, callbacks and Cancel are those of Semaphore.
// AcquirePermissionAsync) and the Lease to give the permit back with once
// it is granted.
//
// While the call waits in its bulkhead's queue, and from its grant until
// the Lease gives the permit back, the bulkhead is in use and is not
// evicted; a call that found the bulkhead as it was being evicted goes to
// the key's new bulkhead instead. So a key never has two bulkheads
// admitting at once, and no permit is lost to an eviction. A call that was
// queued takes its start once granted, with Lease.StartCall, for the
// duration its CallFinished reports.
//
// An empty key, or a configuration that is unknown, yields an Acquisition
// already rejected with an error naming it, and the zero Lease. When key's
// bulkhead exists, it takes no lock of the registry and does no atomic
// read-modify-write of its memory (a lookup, a last-use stamp written at
// most once per sweep period, a check after the acquire), and does not
// allocate: its cost is the Semaphore's and the lookup.
func (r *Registry) AcquirePermissionAsync(key string, opts CallOptions) (*Acquisition, Lease) {
	if key == "" {
		return RejectedAcquisition(errEmptyKeyAsync), Lease{}
	}
	if r.budget != nil {
		return r.acquireAsyncBudgeted(key, opts)
	}
	for {
		e, err := r.cat.LookupOrCatchAll(key, opts.ConfigName)
		if err != nil {
			return RejectedAcquisition(err), Lease{}
		}
		if keyedFoundHook != nil {
			keyedFoundHook(e.Item())
		}
		e.Stamp()
		a := e.Item().AcquirePermissionAsync()
		if e.Dead() && !r.cat.Kept(e) {
			undoAsync(a, e.Item().ReleasePermission)
			continue
		}
		switch a.Err() { // one read of the outcome decides
		case nil:
			return a, Lease{e: e, start: e.Item().StartCall()}
		case ErrPending:
			// The bulkhead is in use while the call waits; its end counts
			// as a use for the idle timeout.
			a.OnDone(func(error) { e.Stamp() })
			return a, Lease{e: e, a: a}
		default:
			return a, Lease{}
		}
	}
}

// keyedFoundHook, if not nil, is called with the bulkhead a keyed call has
// found (plain: right after the lookup; budgeted: once budgetCall found
// its partner) and has not acted on yet: the point where a sweep that
// evicts it must be undone by the fence (Catalog.Kept after the act). It
// is for tests only (registry_fence_internal_test.go), which set it before
// the calls they watch and reset it after; nil, as in production, it is a
// load and a branch not taken (3 instructions per keyed call, callgrind;
// in the catalog's lookup it cost 6, as it made the compiler spill).
var keyedFoundHook func(s *Semaphore)

// undoAsync undoes a, an acquisition on a bulkhead evicted before the call
// reached it (see internal/catalog's fenced path): it gives back what a
// granted (giveBack: its permit, or a budgeted call's weight of them),
// withdraws a call that waits. Nobody else holds a,
// and the registry's listeners do not see its events (Registry.gate).
func undoAsync(a *Acquisition, giveBack func()) {
	if a.Err() == ErrPending && a.Cancel() {
		return
	}
	<-a.Done() // decided by the grant or expiry that beat Cancel
	if a.Err() == nil {
		giveBack()
	}
}

var (
	errEmptyKeyAsync = errors.New("bulkhead: Registry.AcquirePermissionAsync: key must not be empty")
	errEmptyKeyWait  = errors.New("bulkhead: Registry.AcquirePermission: key must not be empty")
	errEmptyKeyTry   = errors.New("bulkhead: Registry.TryAcquirePermission: key must not be empty")
)

// RegistryStats are a registry's counts, for metrics.
type RegistryStats struct {
	// Bulkheads is the number of live bulkheads, the catch-all included.
	Bulkheads int
	// Evictions is the number of bulkheads evicted as idle so far.
	Evictions uint64
	// CatchAllCalls is the number of keyed calls sent to the catch-all
	// because the cap was reached and their key had no bulkhead.
	CatchAllCalls uint64
}

// Stats returns the registry's counts. It takes no lock.
func (r *Registry) Stats() RegistryStats {
	return RegistryStats{Bulkheads: r.cat.Live(), Evictions: r.cat.Evictions(), CatchAllCalls: r.cat.CatchAllCalls()}
}

// OnEvict registers f to be called with the name of every bulkhead the
// registry evicts as idle (not for Remove), and returns a func that
// unregisters it (idempotent). f runs on the sweeping goroutine (the
// Clock's timer goroutine) under the registry's lock, after the bulkhead
// is gone from the registry and before a new one of that name can be
// created: it must be quick and must not call into the registry. Metrics
// use it to forget the evicted bulkhead's counts. A panic in f is
// recovered and ignored; an f that calls runtime.Goexit ends the sweeping
// goroutine, but the other OnEvict funcs are still told, and eviction goes
// on at the next sweep. OnEvict panics if f is nil.
func (r *Registry) OnEvict(f func(name string)) (remove func()) {
	if f == nil {
		panic("bulkhead: Registry.OnEvict called with a nil func")
	}
	l := &evictListener{f: f}
	r.cat.Lock()
	r.evictListeners = append(r.evictListeners, l)
	r.cat.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.cat.Lock()
			defer r.cat.Unlock()
			for i, x := range r.evictListeners {
				if x == l {
					r.evictListeners = append(r.evictListeners[:i:i], r.evictListeners[i+1:]...)
					break
				}
			}
		})
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
		r.clock.AfterFunc(r.idle/2, r.sweep)
	}
}

// idleTicks is how many sweeps (idle/2 apart) an entry must have had no
// user for: 2 sweep periods = idle.
const idleTicks = 2

// sweep is the timer's callback: it evicts idle bulkheads and re-arms
// itself while unpinned bulkheads remain or were created meanwhile. If an
// OnEvict listener ends the sweeping goroutine (runtime.Goexit), the sweep
// stops there and re-arms itself, so eviction goes on at the next tick.
func (r *Registry) sweep() {
	finished := false
	defer func() {
		if !finished {
			r.cat.Lock()
			r.clock.AfterFunc(r.idle/2, r.sweep)
			r.cat.Unlock()
		}
	}()
	unpinned := r.cat.Sweep(idleTicks, busy, r.evictedLocked)
	r.cat.Lock()
	defer r.cat.Unlock()
	finished = true
	if unpinned > 0 || r.createdSince {
		r.createdSince = false
		r.clock.AfterFunc(r.idle/2, r.sweep)
		return
	}
	r.sweepArmed = false
}

// busy reports whether s has a permit held or a call queued: the sweep's
// keep func, which keeps a bulkhead in use by keyed calls (the fenced path
// of internal/catalog). It reads s's counts with Metrics: the queue under
// s's lock, which a keyed call that queues takes, and the permits held
// from s's permit word, which a keyed call granted at once moves by a CAS
// without the lock; the lock, or the word's CAS before the call's load of
// the dead mark against the sweep's CAS of that mark before this load,
// orders the sweep's decision and the call (see Registry, Catalog.Kept).
func busy(s *Semaphore) bool {
	m := s.Metrics()
	return m.InFlightCalls != 0 || m.QueuedCalls != 0
}

// evictedLocked unsubscribes the listeners of an evicted bulkhead and tells
// the OnEvict listeners.
func (r *Registry) evictedLocked(name string, s *Semaphore) {
	r.unsubscribeLocked(s)
	r.leaveBudgetLocked(name, s)
	notifyEvicted(r.evictListeners, name)
}

// notifyEvicted calls every listener of ls with name. A panic is recovered
// and ignored; a listener that calls runtime.Goexit does not keep the ones
// after it from being told (they run while its goroutine unwinds), so that
// every exporter forgets the evicted bulkhead's series.
func notifyEvicted(ls []*evictListener, name string) {
	for i, l := range ls {
		returned := false
		func() {
			defer func() {
				if recover() == nil && !returned { // runtime.Goexit
					notifyEvicted(ls[i+1:], name)
				}
			}()
			l.f(name)
			returned = true
		}()
	}
}
