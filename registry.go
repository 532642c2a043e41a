package bulkhead

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Registry keeps one Semaphore per name (one per partner) and a set of named
// configurations to create them from. It is safe for concurrent use.
type Registry struct {
	defaults Config
	opts     []Option

	mu        sync.Mutex
	configs   map[string]Config
	bulkheads map[string]*Semaphore
}

// RegistryOption configures a Registry.
type RegistryOption interface{ applyRegistry(*Registry) }

type registryOptionFunc func(*Registry)

func (f registryOptionFunc) applyRegistry(r *Registry) { f(r) }

// WithConfig adds a named configuration for BulkheadWithConfig.
func WithConfig(name string, cfg Config) RegistryOption {
	return registryOptionFunc(func(r *Registry) { r.configs[name] = cfg })
}

// WithBulkheadOptions passes opts (such as WithClock) to every Semaphore the
// Registry creates.
func WithBulkheadOptions(opts ...Option) RegistryOption {
	return registryOptionFunc(func(r *Registry) { r.opts = append(r.opts, opts...) })
}

// DefaultConfigName is the name under which a Registry keeps its defaults.
const DefaultConfigName = "default"

// NewRegistry returns a Registry whose bulkheads use defaults unless created
// with a named configuration. Configurations are validated when a bulkhead
// is created from them, so a bad one surfaces as a *ConfigError from
// Bulkhead or BulkheadWithConfig.
func NewRegistry(defaults Config, opts ...RegistryOption) *Registry {
	r := &Registry{
		defaults:  defaults,
		configs:   map[string]Config{DefaultConfigName: defaults},
		bulkheads: map[string]*Semaphore{},
	}
	for _, o := range opts {
		o.applyRegistry(r)
	}
	return r
}

// Bulkhead returns the bulkhead named name, creating it with the default
// configuration if it does not exist yet.
func (r *Registry) Bulkhead(name string) (*Semaphore, error) {
	return r.BulkheadWithConfig(name, DefaultConfigName)
}

// BulkheadWithConfig returns the bulkhead named name, creating it with the
// configuration named configName if it does not exist yet. An existing
// bulkhead is returned as it is, whatever configName says. It fails if
// configName is unknown or its configuration is invalid.
func (r *Registry) BulkheadWithConfig(name, configName string) (*Semaphore, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.bulkheads[name]; ok {
		return s, nil
	}
	cfg, ok := r.configs[configName]
	if !ok {
		return nil, fmt.Errorf("bulkhead %q: unknown config %q (known: %s)", name, configName, strings.Join(r.configNamesLocked(), ", "))
	}
	s, err := New(name, cfg, r.opts...)
	if err != nil {
		return nil, err
	}
	r.bulkheads[name] = s
	return s, nil
}

// AddConfig adds or replaces a named configuration after validating it.
// Bulkheads already created from it keep their configuration; use
// Semaphore.ChangeConfig to change them.
func (r *Registry) AddConfig(name string, cfg Config) error {
	if err := cfg.validateFor(name); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.configs[name] = cfg
	return nil
}

// Find returns the bulkhead named name if it exists.
func (r *Registry) Find(name string) (*Semaphore, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.bulkheads[name]
	return s, ok
}

// All returns every bulkhead, sorted by name.
func (r *Registry) All() []*Semaphore {
	r.mu.Lock()
	all := make([]*Semaphore, 0, len(r.bulkheads))
	for _, s := range r.bulkheads {
		all = append(all, s)
	}
	r.mu.Unlock()
	slices.SortFunc(all, func(a, b *Semaphore) int { return strings.Compare(a.name, b.name) })
	return all
}

// Remove forgets the bulkhead named name and reports whether it existed.
// Holders of the removed *Semaphore may go on using it.
func (r *Registry) Remove(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.bulkheads[name]
	delete(r.bulkheads, name)
	return ok
}

func (r *Registry) configNamesLocked() []string {
	names := make([]string, 0, len(r.configs))
	for n := range r.configs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
