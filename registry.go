package bulkhead

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rxbulkhead/bulkhead/internal/catalog"
)

// Registry keeps one Semaphore per name (one per partner, tenant or client
// key) and a set of named configurations to create them from. It is safe
// for concurrent use.
//
// Two ways in. Get, GetWithConfig, Find and Configure hand out a *Semaphore
// for a name you control; such a bulkhead is pinned: never evicted, so that
// the reference you hold stays the one bulkhead of its name. The keyed
// path is for keys you do not control: TryAcquirePermission,
// AcquirePermission and AcquirePermissionAsync (the trio of Semaphore, with
// a key and CallOptions) return a Lease to give the permit back with. A
// bulkhead in use by keyed calls (a permit held, a call queued) is never
// evicted, so the registry can evict idle bulkheads (WithIdleTimeout) and
// cap their number (WithMaxBulkheads) without ever letting one key run two
// bulkheads at once. See docs/guide.md, "Keys you do not control".
//
// Invariants (see also internal/catalog): the catalog's lock guards the
// set of bulkheads, the listeners, the sweep timer and every creation and
// eviction; lookups take no lock. A keyed call counts nothing in the
// registry: its bulkhead's own permits and queue say it is in use. The
// sweep marks an idle bulkhead's entry dead, then reads those counts
// (busy) and evicts only an unused one; a keyed call that acquired after
// the sweep read them finds the entry dead (Catalog.Kept), undoes its
// acquire and goes to the key's new bulkhead. What orders the two is the
// Semaphore's lock for a call that queues, and for a permit taken at once
// (no lock: the Semaphore's permit word) the sequentially consistent
// atomics: the call's CAS on the word comes before its load of the dead
// mark, the sweep's CAS of the dead mark before its load of the word, so
// at least one of the two sees the other's write. The registry's
// listeners never see the undone call (gate). Get and Configure pin a bulkhead after one atomic add on its user
// count, which the sweep's CAS excludes. The lock order is catalog lock,
// then a Semaphore's lock; no Semaphore callback takes the catalog's lock
// but a gate that finds its bulkhead being decided on, and of the funcs
// users give the registry only OnEvict's run under its lock.
type Registry struct {
	opts   []Option
	optErr error // the first invalid RegistryOption, returned by NewRegistry
	clock  Clock

	idle      time.Duration           // 0: no eviction
	max       int                     // 0: no cap
	catchAll  *Config                 // the catch-all's configuration when max > 0
	maxKeyLen int                     // WithMaxKeyLength's; 0: DefaultMaxKeyLength
	keyConfig func(key string) string // WithKeyConfig's; nil: the defaults

	// budget is WithBudget's (nil: none); partnerOf its func. partners
	// maps each bulkhead the registry created to its BudgetPartner: stored
	// before the bulkhead is published, deleted after it is gone from the
	// catalog (evicted or removed).
	budget    *Budget
	partnerOf func(key string) PartnerOptions
	partners  sync.Map // *Semaphore -> *BudgetPartner

	cat *catalog.Catalog[Config, *Semaphore]
	// Guarded by cat's lock: listeners, evictListeners, the sweep fields.
	listeners      []*registryListener
	evictListeners []*evictListener
	sweepArmed     bool // a sweep timer is pending
	createdSince   bool // a bulkhead was created since the last sweep
}

// registryListener is one Registry.OnEvent registration: the func and its
// subscription on every bulkhead, guarded by Registry.cat's lock.
type registryListener struct {
	f    func(Event)
	subs map[*Semaphore]func()
}

// evictListener is one Registry.OnEvict registration.
type evictListener struct{ f func(name string) }

// RegistryOption configures a Registry.
type RegistryOption interface{ applyRegistry(*Registry) }

type registryOptionFunc func(*Registry)

func (f registryOptionFunc) applyRegistry(r *Registry) { f(r) }

// WithConfig adds a named configuration for GetWithConfig.
func WithConfig(name string, cfg Config) RegistryOption {
	return registryOptionFunc(func(r *Registry) { r.cat.SetConfig(name, cfg) })
}

// WithSemaphoreOptions passes opts (such as WithClock) to every Semaphore the
// Registry creates. The Registry's idle sweep reads the same Clock. A nil
// option among opts makes NewRegistry fail with an error naming its index.
func WithSemaphoreOptions(opts ...Option) RegistryOption {
	return registryOptionFunc(func(r *Registry) {
		for i, o := range opts {
			if o == nil {
				r.setOptErr(fmt.Errorf("bulkhead: NewRegistry: WithSemaphoreOptions: opts[%d] must not be nil", i))
				return
			}
		}
		r.opts = append(r.opts, opts...)
	})
}

// DefaultConfigName is the name under which a Registry keeps its defaults.
const DefaultConfigName = "default"

// NewRegistry returns a Registry whose bulkheads use defaults unless created
// with a named configuration. It validates defaults and every configuration
// given with WithConfig, and fails with a *ConfigError naming the first
// invalid one (Name is the configuration's name, DefaultConfigName for
// defaults, CatchAllName for WithMaxBulkheads' catch-all), so that a bad
// configuration surfaces where it is given rather than at the first Get. It
// fails with an error naming the option if another option is invalid
// (WithIdleTimeout, WithMaxBulkheads, WithMaxKeyLength, WithKeyConfig,
// WithClock(nil)), and with one naming its index in opts if an option is
// nil.
func NewRegistry(defaults Config, opts ...RegistryOption) (*Registry, error) {
	r := &Registry{cat: catalog.New[Config, *Semaphore]("config", DefaultConfigName, defaults)}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("bulkhead: NewRegistry: opts[%d] must not be nil", i)
		}
		o.applyRegistry(r)
	}
	if r.optErr != nil {
		return nil, r.optErr
	}
	if r.maxKeyLen != 0 && r.catchAll == nil {
		return nil, errors.New("bulkhead: NewRegistry: WithMaxKeyLength needs WithMaxBulkheads (its catch-all admits the longer keys)")
	}
	if r.maxKeyLen == 0 {
		r.maxKeyLen = DefaultMaxKeyLength
	}
	if err := r.cat.Configs(func(name string, cfg Config) error { return cfg.validateFor(name) }); err != nil {
		return nil, err
	}
	o, err := newOptions(DefaultConfigName, r.opts)
	if err != nil {
		return nil, fmt.Errorf("bulkhead: NewRegistry: WithSemaphoreOptions: %w", err)
	}
	r.clock = o.clock
	r.cat.SetCreate(r.createLocked)
	if r.keyConfig != nil {
		r.cat.SetKeyConfig(r.keyConfig)
	}
	if r.catchAll != nil {
		s, err := New(CatchAllName, *r.catchAll, r.opts...)
		if err != nil {
			return nil, err
		}
		if err := r.joinBudget(CatchAllName, s); err != nil {
			return nil, err
		}
		r.cat.SetMax(r.max)
		r.cat.Lock()
		r.cat.SetCatchAllLocked(CatchAllName, s)
		r.cat.SetMaxNameLenLocked(r.maxKeyLen)
		r.cat.Unlock()
	}
	return r, nil
}

// Get returns the bulkhead named name, creating it with the default
// configuration if it does not exist yet, and pins it (it is never
// evicted). It fails with an error wrapping ErrRegistryFull if the
// registry holds WithMaxBulkheads bulkheads and name is not one of them.
func (r *Registry) Get(name string) (*Semaphore, error) {
	return r.GetWithConfig(name, DefaultConfigName)
}

// GetWithConfig returns the bulkhead named name, creating it with the
// configuration named configName if it does not exist yet, and pins it
// (it is never evicted). An existing bulkhead is returned as it is,
// whatever configName says. It fails if configName is unknown or its
// configuration is invalid, and as Get does when the registry is full.
// Getting an existing pinned bulkhead takes no lock and writes no shared
// memory (one lookup in a hash table read with atomic loads), so it scales
// across cores.
func (r *Registry) GetWithConfig(name, configName string) (*Semaphore, error) {
	s, err := r.cat.Pin(name, configName)
	if err != nil {
		return nil, r.fullError(name, err)
	}
	return s, nil
}

// fullError turns the catalog's ErrFull into an error naming the bulkhead.
func (r *Registry) fullError(name string, err error) error {
	if errors.Is(err, catalog.ErrFull) {
		return fmt.Errorf("bulkhead %q: %w: it holds %d bulkheads (WithMaxBulkheads)", name, ErrRegistryFull, r.max)
	}
	return err
}

// createLocked creates the bulkhead of entry e, subscribing the registry's
// listeners before anyone else can see it, so they miss none of its
// events, and arms the idle sweep. The catalog stores it.
func (r *Registry) createLocked(e *catalog.Entry[*Semaphore], cfg Config) (*Semaphore, error) {
	s, err := New(e.Name(), cfg, r.opts...)
	if err != nil {
		return nil, err
	}
	if err := r.joinBudget(e.Name(), s); err != nil {
		return nil, err
	}
	for _, l := range r.listeners {
		l.subs[s] = s.OnEvent(r.gate(e, l.f))
	}
	r.armSweepLocked()
	return s, nil
}

// gate is how a registry listener f is subscribed to the bulkhead of entry
// e: it passes every event on but those of a keyed call that acted on the
// bulkhead after its eviction (and then undid its act and went to the
// key's new bulkhead, see keyedAcquire): the registry's listeners see an
// evicted bulkhead's events only from before its eviction. It costs one
// atomic load per event (Catalog.Kept) unless the sweep is deciding about
// e at that moment.
func (r *Registry) gate(e *catalog.Entry[*Semaphore], f func(Event)) func(Event) {
	return func(ev Event) {
		if r.cat.Kept(e) {
			f(ev)
		}
	}
}

// Configure returns the bulkhead named name with configuration cfg, pinned:
// it creates it with cfg if it does not exist, and otherwise applies cfg
// with ChangeConfig. Nobody can observe a new bulkhead with another
// configuration first. It fails with a *ConfigError if cfg is invalid, and
// then changes nothing, and as Get does when the registry is full.
func (r *Registry) Configure(name string, cfg Config) (*Semaphore, error) {
	if err := cfg.validateFor(name); err != nil {
		return nil, err
	}
	s, created, err := r.cat.PinWith(name, cfg)
	if err != nil {
		return nil, r.fullError(name, err)
	}
	if created || s.Config() == cfg {
		return s, nil
	}
	if err := s.ChangeConfig(cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// OnEvent registers f on every bulkhead of the registry, present and future
// (a bulkhead created later is subscribed before it is returned to anyone),
// and returns a func that unregisters it everywhere (idempotent). Removing
// or evicting a bulkhead unsubscribes f from it. f runs as described at
// Semaphore.OnEvent. OnEvent panics if f is nil.
func (r *Registry) OnEvent(f func(Event)) (remove func()) {
	if f == nil {
		panic("bulkhead: Registry.OnEvent called with a nil listener")
	}
	l := &registryListener{f: f, subs: map[*Semaphore]func(){}}
	r.cat.Lock()
	for _, e := range r.cat.EntriesLocked() {
		l.subs[e.Item()] = e.Item().OnEvent(r.gate(e, f))
	}
	r.listeners = append(r.listeners, l)
	r.cat.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.cat.Lock()
			r.listeners = slices.DeleteFunc(r.listeners, func(x *registryListener) bool { return x == l })
			subs := l.subs
			l.subs = nil
			r.cat.Unlock()
			for _, unsubscribe := range subs {
				unsubscribe()
			}
		})
	}
}

// AddConfig adds or replaces a named configuration after validating it.
// Bulkheads already created from it keep their configuration; use
// Semaphore.ChangeConfig to change them.
func (r *Registry) AddConfig(name string, cfg Config) error {
	if err := cfg.validateFor(name); err != nil {
		return err
	}
	r.cat.SetConfig(name, cfg)
	return nil
}

// Find returns the bulkhead named name if it exists, and pins it (it is
// never evicted), as Get does.
func (r *Registry) Find(name string) (*Semaphore, bool) {
	return r.cat.Find(name)
}

// All returns every bulkhead, the catch-all included, sorted by name. It
// does not pin them: it is for reading (Name, Config, Metrics), as the
// metrics collectors do. Do not acquire through a bulkhead from All in a
// registry with WithIdleTimeout (it may be evicted, and a keyed call for
// its name would then create another one): use Get or the keyed path.
func (r *Registry) All() []*Semaphore {
	return r.cat.All()
}

// Remove forgets the bulkhead named name, pinned or not, and reports
// whether it existed. Holders of the removed *Semaphore (and keyed calls
// holding a Lease on it) may go on using it; the registry's listeners
// (OnEvent) no longer receive its events, and the next Get or keyed call
// for name creates a new bulkhead, so for a while name may admit up to
// twice its limit. Eviction (WithIdleTimeout) never does that. The
// catch-all of WithMaxBulkheads is never removed: Remove(CatchAllName)
// reports false and changes nothing.
func (r *Registry) Remove(name string) bool {
	if r.cat.IsCatchAll(name) {
		return false
	}
	r.cat.Lock()
	defer r.cat.Unlock()
	s, ok := r.cat.RemoveLocked(name)
	if !ok {
		return false
	}
	r.unsubscribeLocked(s)
	r.leaveBudgetLocked(name, s)
	return true
}

// unsubscribeLocked unsubscribes the registry's listeners from s.
func (r *Registry) unsubscribeLocked(s *Semaphore) {
	for _, l := range r.listeners {
		if unsubscribe, ok := l.subs[s]; ok {
			delete(l.subs, s)
			unsubscribe()
		}
	}
}
