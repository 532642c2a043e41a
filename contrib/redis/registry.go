package redis

import (
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/catalog"
	"github.com/rxbulkhead/bulkhead/internal/fanout"
)

// Registry keeps one fleet Bulkhead per name on one Store, created from
// named configurations, as bulkhead.Registry does for Semaphores. It is
// safe for concurrent use.
//
// Two ways in, as in bulkhead.Registry. Get, GetWithConfig and Find hand
// out a *Bulkhead for a name you control; such a bulkhead is pinned: never
// evicted. The keyed path, Acquire(key, opts), is for keys you do not control
// (tenants, client ids, hosts from user data): the registry counts each
// keyed call as a user of its bulkhead until its Permit is given back, so
// it can evict idle bulkheads (WithIdleTimeout) and cap their number
// (WithMaxBulkheads) without ever letting one key run two bulkheads at
// once in this process. An evicted bulkhead leaves the Store: no round
// trip, renewal or notification concerns it any more, and its keys in
// Redis expire by themselves (see the guide).
//
// Invariants (see also internal/catalog): the catalog's lock guards the
// set of bulkheads, the listeners, the sweep timer and every creation and
// eviction; a bulkhead's user count (owned by its catalog entry) decides,
// by one CAS, between its eviction and a new keyed call or Get. The lock
// order is the catalog's lock, then a Bulkhead's mu (the sweep reads
// Metrics under it), then the Store's mu (retire); no Bulkhead callback
// takes the catalog's lock.
type Registry struct {
	s      *Store
	cat    *catalog.Catalog[Config, *Bulkhead]
	optErr error // the first invalid RegistryOption, returned by NewRegistry

	idle      time.Duration // 0: no eviction
	max       int           // 0: no cap
	catchAll  *Config       // the catch-all's configuration when max > 0
	maxKeyLen int           // WithMaxKeyLength's; 0: bulkhead.DefaultMaxKeyLength
	keyConfig func(key string) string

	// fan holds the registry-wide listeners (OnEvent, OnEvict), guarded by
	// cat's lock, as those of pool.Registry.
	fan *fanout.Set[*Bulkhead, bulkhead.Event]

	// Guarded by cat's lock: the sweep fields.
	sweepArmed   bool // a sweep timer is pending
	createdSince bool // a bulkhead was created since the last sweep
}

// RegistryOption configures a Registry.
type RegistryOption func(*Registry)

// WithConfig adds a named configuration for GetWithConfig.
func WithConfig(name string, cfg Config) RegistryOption {
	return func(r *Registry) { r.cat.SetConfig(name, cfg) }
}

// WithIdleTimeout makes the registry evict a bulkhead that has had no keyed
// call in progress (none waiting, none holding a permit, in this process)
// for idle: it leaves the registry and the Store, with its listeners'
// subscriptions, and the next keyed call for its key creates it again
// from its configuration. An evicted bulkhead sends the releases and
// withdrawals it still owes Redis, then nothing: no renewal, no poll, no
// notification; since it holds no lease and no ticket, its keys in Redis
// expire by themselves once no replica uses the name (the longest of
// LeaseTTL and TicketTTL after the last write, the counter twice that).
// Bulkheads handed out by Get, GetWithConfig or Find are pinned and never
// evicted.
//
// An idle bulkhead is evicted between idle and 1.5 idle after its last
// keyed call ended: one sweep per registry runs every idle/2 on the
// Store's Clock (StoreConfig.Clock), only while the registry holds
// unpinned bulkheads, on the Clock's timer goroutine. idle must be
// positive; NewRegistry fails otherwise.
func WithIdleTimeout(idle time.Duration) RegistryOption {
	return func(r *Registry) {
		if idle <= 0 {
			r.setOptErr(fmt.Errorf("redis: NewRegistry: WithIdleTimeout: idle timeout must be positive, got %v", idle))
			return
		}
		r.idle = idle
	}
}

// WithMaxBulkheads caps the number of bulkheads of this registry at max
// (the catch-all not counted). Once it is reached, a keyed call whose key
// has no bulkhead is admitted by the catch-all fleet bulkhead, named
// bulkhead.CatchAllName and configured with catchAll, which all such keys
// share, here and in every replica with the same KeyPrefix (one set of
// keys in Redis): a flood of new keys competes for the catch-all's permits,
// never for those of the keys that already have a bulkhead, and never goes
// unlimited. Get and GetWithConfig of a new name fail with an error
// wrapping bulkhead.ErrRegistryFull instead. Combine it with
// WithIdleTimeout, or the cap, once reached, stays reached. A key longer
// than the registry's maximum key length (WithMaxKeyLength,
// bulkhead.DefaultMaxKeyLength by default) that has no bulkhead goes to
// the catch-all too, so that long keys grow neither the registry nor the
// names of the keys in Redis. max must be at least 1 and catchAll valid;
// NewRegistry fails otherwise.
func WithMaxBulkheads(max int, catchAll Config) RegistryOption {
	return func(r *Registry) {
		if max < 1 {
			r.setOptErr(fmt.Errorf("redis: NewRegistry: WithMaxBulkheads: max must be at least 1, got %d", max))
			return
		}
		if err := catchAll.validateFor(bulkhead.CatchAllName); err != nil {
			r.setOptErr(err)
			return
		}
		r.max, r.catchAll = max, &catchAll
	}
}

// WithMaxKeyLength sets the length in bytes of the longest key a keyed call
// creates a fleet bulkhead for in a registry with WithMaxBulkheads
// (default bulkhead.DefaultMaxKeyLength): a longer key that has no
// bulkhead is admitted by the catch-all (and counted in
// RegistryStats.CatchAllCalls), so a flood of long keys (a megabyte
// header) holds at most max bulkheads of bounded size here and writes no
// key of that length to Redis. Bulkheads created with Get or
// GetWithConfig are not bound by it. n must be at least 1, and the option
// needs WithMaxBulkheads; NewRegistry fails otherwise.
func WithMaxKeyLength(n int) RegistryOption {
	return func(r *Registry) {
		if n < 1 {
			r.setOptErr(fmt.Errorf("redis: NewRegistry: WithMaxKeyLength: length must be at least 1, got %d", n))
			return
		}
		r.maxKeyLen = n
	}
}

// WithKeyConfig makes a keyed call that names no configuration
// (CallOptions.ConfigName "") create the bulkhead of key from the
// configuration named configName(key) rather than from the defaults.
// configName runs on the calling goroutine, without any lock of the
// registry, when a keyed call finds no live bulkhead for key (so it may
// run more than once for one creation, and never once the cap of
// WithMaxBulkheads sends key to the catch-all); it may call into the
// registry. If it panics or calls runtime.Goexit, Acquire does so too,
// holding nothing. A name it returns that is not a known configuration
// rejects the call with an error naming it. A nil configName makes
// NewRegistry fail.
func WithKeyConfig(configName func(key string) string) RegistryOption {
	return func(r *Registry) {
		if configName == nil {
			r.setOptErr(errors.New("redis: NewRegistry: WithKeyConfig: configName func must not be nil"))
			return
		}
		r.keyConfig = configName
	}
}

func (r *Registry) setOptErr(err error) {
	if r.optErr == nil {
		r.optErr = err
	}
}

// NewRegistry returns a Registry of bulkheads on s that use defaults
// unless created with a named configuration. It validates every
// configuration and fails with a *bulkhead.ConfigError naming the first
// invalid one (bulkhead.DefaultConfigName for defaults,
// bulkhead.CatchAllName for WithMaxBulkheads' catch-all), and with an
// error naming the option if another option is invalid.
func NewRegistry(s *Store, defaults Config, opts ...RegistryOption) (*Registry, error) {
	if s == nil {
		return nil, fmt.Errorf("redis: NewRegistry: store must not be nil")
	}
	r := &Registry{s: s, cat: catalog.New[Config, *Bulkhead]("config", bulkhead.DefaultConfigName, defaults)}
	r.fan = fanout.New(r.cat, r.cat.ItemsLocked)
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("redis: NewRegistry: nil RegistryOption")
		}
		o(r)
	}
	if r.optErr != nil {
		return nil, r.optErr
	}
	if r.maxKeyLen != 0 && r.catchAll == nil {
		return nil, errors.New("redis: NewRegistry: WithMaxKeyLength needs WithMaxBulkheads (its catch-all admits the longer keys)")
	}
	if r.maxKeyLen == 0 {
		r.maxKeyLen = bulkhead.DefaultMaxKeyLength
	}
	if err := r.cat.Configs(func(name string, cfg Config) error { return cfg.validateFor(name) }); err != nil {
		return nil, err
	}
	r.cat.SetCreate(r.createLocked)
	if r.keyConfig != nil {
		r.cat.SetKeyConfig(r.keyConfig)
	}
	if r.catchAll != nil {
		b, err := NewBulkhead(s, bulkhead.CatchAllName, *r.catchAll)
		if err != nil {
			return nil, err
		}
		r.cat.SetMax(r.max)
		r.cat.Lock()
		r.cat.SetCatchAllLocked(bulkhead.CatchAllName, b)
		r.cat.SetMaxNameLenLocked(r.maxKeyLen)
		r.cat.Unlock()
	}
	return r, nil
}

// Get returns the bulkhead named name, creating it with the defaults if it
// does not exist yet, and pins it (it is never evicted). It fails with an
// error wrapping bulkhead.ErrRegistryFull if the registry holds
// WithMaxBulkheads bulkheads and name is not one of them.
func (r *Registry) Get(name string) (*Bulkhead, error) {
	return r.GetWithConfig(name, bulkhead.DefaultConfigName)
}

// GetWithConfig returns the bulkhead named name, creating it with the
// configuration named configName if it does not exist yet (an existing
// one is returned as it is), and pins it. It fails if configName is
// unknown, and as Get does when the registry is full.
func (r *Registry) GetWithConfig(name, configName string) (*Bulkhead, error) {
	b, err := r.cat.Pin(name, configName)
	return b, r.fullError(name, err)
}

// fullError turns the catalog's ErrFull into an error naming the bulkhead.
func (r *Registry) fullError(name string, err error) error {
	if errors.Is(err, catalog.ErrFull) {
		return fmt.Errorf("redis bulkhead %q: %w: it holds %d bulkheads (WithMaxBulkheads)", name, bulkhead.ErrRegistryFull, r.max)
	}
	return err
}

// createLocked creates a bulkhead, subscribing the registry's listeners
// before anyone else can see it, so they miss none of its events, and
// arms the idle sweep. The catalog stores it.
func (r *Registry) createLocked(e *catalog.Entry[*Bulkhead], cfg Config) (*Bulkhead, error) {
	b, err := NewBulkhead(r.s, e.Name(), cfg)
	if err != nil {
		return nil, err
	}
	r.fan.AddedLocked(b)
	r.armSweepLocked()
	return b, nil
}

// Find returns the bulkhead named name if it exists, and pins it.
func (r *Registry) Find(name string) (*Bulkhead, bool) { return r.cat.Find(name) }

// All returns the bulkheads, the catch-all included, sorted by name. It
// does not pin them: it is for reading (Name, Config, Metrics). Do not
// acquire through a bulkhead from All in a registry with WithIdleTimeout:
// an evicted one rejects every call (ErrClosed); use Get or Acquire.
func (r *Registry) All() []*Bulkhead { return r.cat.All() }

// AllMetrics yields the name and Metrics of every live bulkhead, the
// catch-all included, in name order, for exporters (it satisfies
// bulkhead.MetricsSource with OnEvent, OnEvict and Stats).
func (r *Registry) AllMetrics() iter.Seq2[string, bulkhead.Metrics] {
	return func(yield func(string, bulkhead.Metrics) bool) {
		for _, b := range r.cat.All() {
			if !yield(b.name, b.Metrics()) {
				return
			}
		}
	}
}

// OnEvent registers f on every bulkhead of the registry, present and
// future (a bulkhead created later is subscribed before it is returned to
// anyone), and returns a func that unregisters it everywhere
// (idempotent). Evicting a bulkhead unsubscribes f from it. f runs as
// described at Bulkhead.OnEvent. OnEvent panics if f is nil.
func (r *Registry) OnEvent(f func(bulkhead.Event)) (remove func()) {
	if f == nil {
		panic("redis: Registry.OnEvent called with a nil listener")
	}
	return r.fan.OnEvent(f)
}

// OnEvict registers f to be called with the name of every bulkhead the
// registry evicts as idle, and returns a func that unregisters it
// (idempotent). f runs on the sweeping goroutine (the Clock's timer
// goroutine) under the registry's lock, after the bulkhead is gone from
// the registry and before a new one of that name can be created: it must
// be quick and must not call into the registry. Metrics use it to forget
// the evicted bulkhead's series. A panic in f is recovered and ignored; if
// f calls runtime.Goexit, the listeners after it are still told and the
// sweeps go on. OnEvict panics if f is nil.
func (r *Registry) OnEvict(f func(name string)) (remove func()) {
	if f == nil {
		panic("redis: Registry.OnEvict called with a nil func")
	}
	return r.fan.OnEvict(f)
}

// Stats returns the registry's counts: live bulkheads (the catch-all
// included), evictions so far, and keyed calls the cap sent to the
// catch-all. It takes no lock.
func (r *Registry) Stats() bulkhead.RegistryStats {
	return bulkhead.RegistryStats{Bulkheads: r.cat.Live(), Evictions: r.cat.Evictions(), CatchAllCalls: r.cat.CatchAllCalls()}
}
