package bulkhead

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// PoolRegistry keeps one Pool per name (one per blocking dependency) and a
// set of named configurations to create them from, as Registry does for
// Semaphores. It is safe for concurrent use.
type PoolRegistry struct {
	opts []Option
	cat  catalog[PoolConfig, *Pool]
}

// PoolRegistryOption configures a PoolRegistry.
type PoolRegistryOption interface{ applyPoolRegistry(*PoolRegistry) }

type poolRegistryOptionFunc func(*PoolRegistry)

func (f poolRegistryOptionFunc) applyPoolRegistry(r *PoolRegistry) { f(r) }

// WithPoolConfig adds a named configuration for PoolWithConfig.
func WithPoolConfig(name string, cfg PoolConfig) PoolRegistryOption {
	return poolRegistryOptionFunc(func(r *PoolRegistry) { r.cat.configs[name] = cfg })
}

// WithPoolOptions passes opts (such as WithClock) to every Pool the
// PoolRegistry creates.
func WithPoolOptions(opts ...Option) PoolRegistryOption {
	return poolRegistryOptionFunc(func(r *PoolRegistry) { r.opts = append(r.opts, opts...) })
}

// NewPoolRegistry returns a PoolRegistry whose pools use defaults unless
// created with a named configuration (kept under DefaultConfigName).
// Configurations are validated when a pool is created from them, so a bad
// one surfaces as a *ConfigError from Pool or PoolWithConfig.
func NewPoolRegistry(defaults PoolConfig, opts ...PoolRegistryOption) *PoolRegistry {
	r := &PoolRegistry{cat: newCatalog[PoolConfig, *Pool]("pool config", defaults)}
	for _, o := range opts {
		o.applyPoolRegistry(r)
	}
	return r
}

// Pool returns the pool named name, creating it with the default
// configuration if it does not exist yet.
func (r *PoolRegistry) Pool(name string) (*Pool, error) {
	return r.PoolWithConfig(name, DefaultConfigName)
}

// PoolWithConfig returns the pool named name, creating it with the
// configuration named configName if it does not exist yet. An existing pool
// is returned as it is, whatever configName says. It fails if configName is
// unknown or its configuration is invalid.
func (r *PoolRegistry) PoolWithConfig(name, configName string) (*Pool, error) {
	return r.cat.getOrCreate(name, configName, func(name string, cfg PoolConfig) (*Pool, error) {
		p, err := NewPool(name, cfg, r.opts...)
		if err == nil {
			r.cat.items[name] = p
		}
		return p, err
	})
}

// AddConfig adds or replaces a named configuration after validating it.
// Pools already created from it keep their configuration.
func (r *PoolRegistry) AddConfig(name string, cfg PoolConfig) error {
	if err := cfg.validateFor(name); err != nil {
		return err
	}
	r.cat.setConfig(name, cfg)
	return nil
}

// Find returns the pool named name if it exists.
func (r *PoolRegistry) Find(name string) (*Pool, bool) {
	return r.cat.find(name)
}

// All returns every pool, sorted by name.
func (r *PoolRegistry) All() []*Pool {
	return r.cat.all()
}

// Remove forgets the pool named name and reports whether it existed. It does
// not close the pool: holders of the removed *Pool may go on using it, and
// whoever removes it should Close it.
func (r *PoolRegistry) Remove(name string) bool {
	r.cat.mu.Lock()
	defer r.cat.mu.Unlock()
	_, ok := r.cat.removeLocked(name)
	return ok
}

// Close closes every pool the registry holds, concurrently, with the
// semantics of Pool.Close, and returns their errors joined (nil if all
// drained in time). The pools stay in the registry, closed.
func (r *PoolRegistry) Close(ctx context.Context) error {
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
