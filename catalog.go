package bulkhead

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// catalog is what Registry and PoolRegistry share: named configurations and
// one item (Semaphore or Pool) per name, all guarded by mu.
type catalog[C any, B any] struct {
	kind string // how errors name a configuration: "config", "pool config"

	mu      sync.Mutex
	configs map[string]C
	items   map[string]B
}

func newCatalog[C any, B any](kind string, defaults C) catalog[C, B] {
	return catalog[C, B]{kind: kind, configs: map[string]C{DefaultConfigName: defaults}, items: map[string]B{}}
}

// getOrCreate returns the item named name, or creates it under mu from the
// configuration named configName with create, which must not call back into
// the catalog.
func (c *catalog[C, B]) getOrCreate(name, configName string, create func(name string, cfg C) (B, error)) (B, error) {
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

// setConfig adds or replaces a named configuration.
func (c *catalog[C, B]) setConfig(name string, cfg C) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.configs[name] = cfg
}

func (c *catalog[C, B]) find(name string) (B, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.items[name]
	return b, ok
}

// all returns the items in the order of their names.
func (c *catalog[C, B]) all() []B {
	c.mu.Lock()
	defer c.mu.Unlock()
	all := make([]B, 0, len(c.items))
	for _, name := range slices.Sorted(maps.Keys(c.items)) {
		all = append(all, c.items[name])
	}
	return all
}

// removeLocked forgets the item named name and returns it.
func (c *catalog[C, B]) removeLocked(name string) (B, bool) {
	b, ok := c.items[name]
	delete(c.items, name)
	return b, ok
}
