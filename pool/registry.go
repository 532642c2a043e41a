package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/catalog"
	"github.com/rxbulkhead/bulkhead/internal/fanout"
)

// Registry keeps one Pool per name (one per blocking dependency) and a set
// of named configurations to create them from, as bulkhead.Registry does
// for Semaphores. For keys you do not control (tenants, clients), bound it
// with WithIdleTimeout and WithMaxPools and submit with SubmitKeyed. It is
// safe for concurrent use.
type Registry struct {
	opts []Option
	cat  *catalog.Catalog[Config, *Pool]

	// Bounded keyed state (registry_keyed.go).
	optErr    error
	clock     bulkhead.Clock
	idle      time.Duration // 0: no eviction
	max       int           // 0: no cap
	catchAll  *Config
	maxKeyLen int // WithMaxKeyLength's; 0: bulkhead.DefaultMaxKeyLength
	// sweepArmed and createdSince are guarded by the catalog's lock.
	sweepArmed, createdSince bool

	// The registry-wide listeners of MetricsSource (metrics.go), guarded
	// by the catalog's lock.
	fan *fanout.Set[*Pool, bulkhead.Event]

	// closed is set by Close, under the catalog's lock, before it lists
	// the pools to close; createLocked, which runs under that lock, then
	// creates no pool, so no pool is created after Close has listed them.
	closed bool
}

// RegistryOption configures a Registry: WithConfig, or any Option, which
// then applies to every Pool the Registry creates.
type RegistryOption interface{ applyRegistry(*Registry) }

type registryOptionFunc func(*Registry)

func (f registryOptionFunc) applyRegistry(r *Registry) { f(r) }

// WithConfig adds a named configuration for GetWithConfig.
func WithConfig(name string, cfg Config) RegistryOption {
	return registryOptionFunc(func(r *Registry) { r.cat.SetConfig(name, cfg) })
}

// NewRegistry returns a Registry whose pools use defaults unless created
// with a named configuration; defaults are kept under
// bulkhead.DefaultConfigName. Invalid input fails here, where it is given:
// NewRegistry returns a *bulkhead.ConfigError naming the configuration if
// defaults or a configuration of WithConfig is not valid, and an error if
// an Option is (such as WithClock(nil)).
func NewRegistry(defaults Config, opts ...RegistryOption) (*Registry, error) {
	r := &Registry{cat: catalog.New[Config, *Pool]("pool config", bulkhead.DefaultConfigName, defaults)}
	r.fan = fanout.New(r.cat, r.cat.ItemsLocked)
	for _, o := range opts {
		o.applyRegistry(r)
	}
	if r.optErr != nil {
		return nil, r.optErr
	}
	if err := r.cat.Configs(func(name string, cfg Config) error { return cfg.validateFor(name) }); err != nil {
		return nil, err
	}
	o, err := newOptions(r.opts)
	if err != nil {
		return nil, fmt.Errorf("pool: NewRegistry: %w", err)
	}
	r.clock = o.clock
	r.cat.SetCreate(r.createLocked)
	if err := r.initCatchAll(); err != nil {
		return nil, err
	}
	return r, nil
}

// Get returns the pool named name, creating it with the default
// configuration if it does not exist yet.
func (r *Registry) Get(name string) (*Pool, error) {
	return r.GetWithConfig(name, bulkhead.DefaultConfigName)
}

// GetWithConfig returns the pool named name, creating it with the
// configuration named configName if it does not exist yet. An existing pool
// is returned as it is, whatever configName says. It fails if configName is
// unknown or name is empty, and, after Close, with an error matching
// ErrClosed if the pool would have to be created. Getting an existing pool
// takes no lock and writes no shared memory (one lookup in a hash table
// read with atomic loads), so it scales across cores.
func (r *Registry) GetWithConfig(name, configName string) (*Pool, error) {
	p, err := r.cat.Pin(name, configName)
	if err != nil {
		return nil, r.fullError(name, err)
	}
	return p, nil
}

// AddConfig adds or replaces a named configuration after validating it.
// Pools already created from it keep their configuration.
func (r *Registry) AddConfig(name string, cfg Config) error {
	if err := cfg.validateFor(name); err != nil {
		return err
	}
	r.cat.SetConfig(name, cfg)
	return nil
}

// Find returns the pool named name if it exists.
func (r *Registry) Find(name string) (*Pool, bool) {
	return r.cat.Find(name)
}

// All returns every pool, sorted by name. Unlike Get and Find it pins
// none: a pool that SubmitKeyed created may still be evicted as idle
// (WithIdleTimeout), and then closed, while the caller holds it; look it up
// with Find to keep it.
func (r *Registry) All() []*Pool {
	return r.cat.All()
}

// Remove forgets the pool named name and reports whether it existed. It does
// not close the pool: holders of the removed *Pool may go on using it, and
// whoever removes it should Close it.
func (r *Registry) Remove(name string) bool {
	r.cat.Lock()
	defer r.cat.Unlock()
	p, ok := r.cat.RemoveLocked(name)
	if ok {
		r.fan.RemovedLocked(p)
	}
	return ok
}

// Close closes every pool the registry holds, concurrently, with the
// semantics of Pool.Close, and returns their errors joined (nil if all
// drained in time). The pools stay in the registry, closed. From the first
// Close on the registry creates no pool: Get and GetWithConfig of a name
// that has none fail, and SubmitKeyed of a key that has none (or whose pool
// was evicted) returns a Future rejected, with an error matching ErrClosed,
// so no worker starts after a shutdown. Close panics if ctx is nil.
func (r *Registry) Close(ctx context.Context) error {
	if ctx == nil {
		panic("pool: Registry.Close called with a nil context")
	}
	r.cat.Lock()
	r.closed = true
	r.cat.Unlock()
	all := r.All()
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, p := range all {
		wg.Go(func() {
			if err := p.Close(ctx); err != nil {
				errs[i] = fmt.Errorf("pool %q: %w", p.name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
