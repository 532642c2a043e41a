package redis

import (
	"fmt"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/catalog"
)

// Registry keeps one fleet Bulkhead per name on one Store, created from
// named configurations, as bulkhead.Registry does for Semaphores. It is
// safe for concurrent use.
type Registry struct {
	s   *Store
	cat *catalog.Catalog[Config, *Bulkhead]
	// listeners are guarded by cat's lock.
	listeners []func(bulkhead.Event)
}

// RegistryOption configures a Registry.
type RegistryOption func(*Registry)

// WithConfig adds a named configuration for GetWithConfig.
func WithConfig(name string, cfg Config) RegistryOption {
	return func(r *Registry) { r.cat.SetConfig(name, cfg) }
}

// NewRegistry returns a Registry of bulkheads on s that use defaults
// unless created with a named configuration. It validates every
// configuration and fails with a *bulkhead.ConfigError naming the first
// invalid one (bulkhead.DefaultConfigName for defaults).
func NewRegistry(s *Store, defaults Config, opts ...RegistryOption) (*Registry, error) {
	if s == nil {
		return nil, fmt.Errorf("redis: NewRegistry: store must not be nil")
	}
	r := &Registry{s: s, cat: catalog.New[Config, *Bulkhead]("config", bulkhead.DefaultConfigName, defaults)}
	for _, o := range opts {
		o(r)
	}
	if err := r.cat.Configs(func(name string, cfg Config) error { return cfg.validateFor(name) }); err != nil {
		return nil, err
	}
	return r, nil
}

// Get returns the bulkhead named name, creating it with the defaults if it
// does not exist yet.
func (r *Registry) Get(name string) (*Bulkhead, error) {
	return r.GetWithConfig(name, bulkhead.DefaultConfigName)
}

// GetWithConfig returns the bulkhead named name, creating it with the
// configuration named configName if it does not exist yet (an existing
// one is returned as it is). It fails if configName is unknown.
func (r *Registry) GetWithConfig(name, configName string) (*Bulkhead, error) {
	return r.cat.GetOrCreate(name, configName, func(name string, cfg Config) (*Bulkhead, error) {
		b, err := NewBulkhead(r.s, name, cfg)
		if err != nil {
			return nil, err
		}
		for _, f := range r.listeners {
			b.OnEvent(f)
		}
		r.cat.PutLocked(name, b)
		return b, nil
	})
}

// Find returns the bulkhead named name if it exists.
func (r *Registry) Find(name string) (*Bulkhead, bool) { return r.cat.Find(name) }

// All returns the bulkheads, sorted by name.
func (r *Registry) All() []*Bulkhead { return r.cat.All() }

// OnEvent registers f on every bulkhead of the registry, present and
// future. It panics if f is nil.
func (r *Registry) OnEvent(f func(bulkhead.Event)) {
	if f == nil {
		panic("redis: Registry.OnEvent called with a nil listener")
	}
	r.cat.Lock()
	defer r.cat.Unlock()
	r.listeners = append(r.listeners, f)
	for _, b := range r.cat.ItemsLocked() {
		b.OnEvent(f)
	}
}
