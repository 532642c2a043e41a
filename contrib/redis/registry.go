package redis

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/rxbulkhead/bulkhead"
)

// Registry keeps one fleet Bulkhead per name on one Store, created from
// named configurations, as bulkhead.Registry does for Semaphores. It is
// safe for concurrent use.
type Registry struct {
	s         *Store
	mu        sync.Mutex
	configs   map[string]Config
	bulkheads map[string]*Bulkhead
	listeners []func(bulkhead.Event)
}

// RegistryOption configures a Registry.
type RegistryOption func(*Registry)

// WithConfig adds a named configuration for GetWithConfig.
func WithConfig(name string, cfg Config) RegistryOption {
	return func(r *Registry) { r.configs[name] = cfg }
}

// NewRegistry returns a Registry of bulkheads on s that use defaults
// unless created with a named configuration. It validates every
// configuration and fails with a *bulkhead.ConfigError naming the first
// invalid one (bulkhead.DefaultConfigName for defaults).
func NewRegistry(s *Store, defaults Config, opts ...RegistryOption) (*Registry, error) {
	if s == nil {
		return nil, fmt.Errorf("redis: NewRegistry: store must not be nil")
	}
	r := &Registry{s: s, configs: map[string]Config{bulkhead.DefaultConfigName: defaults}, bulkheads: map[string]*Bulkhead{}}
	for _, o := range opts {
		o(r)
	}
	for _, name := range slices.Sorted(maps.Keys(r.configs)) {
		if err := r.configs[name].validateFor(name); err != nil {
			return nil, err
		}
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
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.bulkheads[name]; ok {
		return b, nil
	}
	cfg, ok := r.configs[configName]
	if !ok {
		return nil, fmt.Errorf("redis: registry: bulkhead %q: unknown config %q (known: %v)", name, configName, slices.Sorted(maps.Keys(r.configs)))
	}
	b, err := NewBulkhead(r.s, name, cfg)
	if err != nil {
		return nil, err
	}
	for _, f := range r.listeners {
		b.OnEvent(f)
	}
	r.bulkheads[name] = b
	return b, nil
}

// Find returns the bulkhead named name if it exists.
func (r *Registry) Find(name string) (*Bulkhead, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.bulkheads[name]
	return b, ok
}

// All returns the bulkheads, sorted by name.
func (r *Registry) All() []*Bulkhead {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Bulkhead, 0, len(r.bulkheads))
	for _, name := range slices.Sorted(maps.Keys(r.bulkheads)) {
		out = append(out, r.bulkheads[name])
	}
	return out
}

// OnEvent registers f on every bulkhead of the registry, present and
// future. It panics if f is nil.
func (r *Registry) OnEvent(f func(bulkhead.Event)) {
	if f == nil {
		panic("redis: Registry.OnEvent called with a nil listener")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listeners = append(r.listeners, f)
	for _, b := range r.bulkheads {
		b.OnEvent(f)
	}
}
