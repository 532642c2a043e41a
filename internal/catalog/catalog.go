// Package catalog is what bulkhead.Registry and pool.Registry share: a set
// of named configurations and one item (a Semaphore or a Pool) per name,
// all behind one mutex.
package catalog

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Catalog maps names to configurations C and to items B. It is safe for
// concurrent use; the ...Locked methods need the caller to hold Lock, which
// also guards whatever the owning registry keeps next to it.
type Catalog[C any, B any] struct {
	kind string // how errors name a configuration: "config", "pool config"

	mu      sync.Mutex
	configs map[string]C
	items   map[string]B
}

// New returns a Catalog that holds defaults under defaultName. kind is how
// errors name a configuration.
func New[C any, B any](kind, defaultName string, defaults C) *Catalog[C, B] {
	return &Catalog[C, B]{kind: kind, configs: map[string]C{defaultName: defaults}, items: map[string]B{}}
}

// Lock locks the catalog.
func (c *Catalog[C, B]) Lock() { c.mu.Lock() }

// Unlock unlocks the catalog.
func (c *Catalog[C, B]) Unlock() { c.mu.Unlock() }

// GetOrCreate returns the item named name, or creates it under the lock
// from the configuration named configName with create, which must not call
// back into the catalog and registers the item with PutLocked if it wants
// it kept.
func (c *Catalog[C, B]) GetOrCreate(name, configName string, create func(name string, cfg C) (B, error)) (B, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.items[name]; ok {
		return b, nil
	}
	cfg, ok := c.configs[configName]
	if !ok {
		var zero B
		return zero, fmt.Errorf("bulkhead %q: unknown %s %q (known: %s)", name, c.kind, configName, strings.Join(slices.Sorted(maps.Keys(c.configs)), ", "))
	}
	return create(name, cfg)
}

// SetConfig adds or replaces a named configuration.
func (c *Catalog[C, B]) SetConfig(name string, cfg C) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.configs[name] = cfg
}

// Configs calls f with every configuration, in the order of their names,
// under the lock; f must not call back into the catalog. It stops at the
// first error f returns and returns it.
func (c *Catalog[C, B]) Configs(f func(name string, cfg C) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(c.configs)) {
		if err := f(name, c.configs[name]); err != nil {
			return err
		}
	}
	return nil
}

// Find returns the item named name if it exists.
func (c *Catalog[C, B]) Find(name string) (B, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.items[name]
	return b, ok
}

// All returns the items in the order of their names.
func (c *Catalog[C, B]) All() []B {
	c.mu.Lock()
	defer c.mu.Unlock()
	all := make([]B, 0, len(c.items))
	for _, name := range slices.Sorted(maps.Keys(c.items)) {
		all = append(all, c.items[name])
	}
	return all
}

// ItemsLocked returns the items, in no particular order.
func (c *Catalog[C, B]) ItemsLocked() []B { return slices.Collect(maps.Values(c.items)) }

// FindLocked is Find for a caller that holds the lock.
func (c *Catalog[C, B]) FindLocked(name string) (B, bool) {
	b, ok := c.items[name]
	return b, ok
}

// PutLocked registers b under name.
func (c *Catalog[C, B]) PutLocked(name string, b B) { c.items[name] = b }

// RemoveLocked forgets the item named name and returns it.
func (c *Catalog[C, B]) RemoveLocked(name string) (B, bool) {
	b, ok := c.items[name]
	delete(c.items, name)
	return b, ok
}
