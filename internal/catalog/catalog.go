// Package catalog is what bulkhead.Registry and pool.Registry share: a set
// of named configurations and one item (a Semaphore or a Pool) per name,
// with a read path that takes no catalog-wide lock (the items are split
// into 64 shards by a hash of the name, each a Go map under its own
// read-write lock), an optional cap on the number of items and idle
// eviction.
//
// Invariants:
//   - mu guards configs and every change of the set of items: a creation
//     (store) and an eviction (the CAS of users 0 -> dead and the remove
//     that follows) both happen under mu, so under mu an item found in the
//     map is never dead. A shard's lock is taken after mu, never before,
//     and only around one map access.
//   - A slot's pinned flag is only ever set (markPinned), after its
//     entry's: a reader that sees it may return the item without touching
//     the entry.
//   - Entry.users counts who may still act on an item through the catalog:
//     one per Enter until its Leave, plus one forever once it is pinned.
//     Its CAS from 0 to dead (evicting) and Enter's CAS from n >= 0 to n+1
//     are the single decision between an eviction and a new user: the loser
//     of the race sees the other's value and retries (Enter looks the name
//     up again, under mu, where the dead entry is gone) or skips (Sweep).
//   - A pinned entry has users >= 1 forever, so it is never evicted.
package catalog

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// ErrFull is returned by Enter and Pin when the catalog holds its maximum
// number of items and name is not one of them.
var ErrFull = errors.New("catalog full")

// dead is Entry.users of an evicted entry.
const dead = -1

// Catalog maps names to configurations C and to items B. It is safe for
// concurrent use; the ...Locked methods need the caller to hold Lock, which
// also guards whatever the owning registry keeps next to it.
type Catalog[C any, B any] struct {
	kind string // how errors name a configuration: "config", "pool config"

	items shards[B] // name -> entry; read without mu, changed under mu
	// counted is the number of items that count towards max (all but
	// those stored with PutPinnedLocked).
	counted atomic.Int64
	// tick is the sweep count, stamped on entries when they are used.
	tick      atomic.Uint64
	evictions atomic.Uint64

	mu      sync.Mutex
	configs map[string]C
	max     int // 0: no cap

	catchAll      *catchAll[B] // nil: none (catchall.go)
	catchAllCalls atomic.Uint64
}

// Entry is one item and its users. Its methods are safe for concurrent use.
type Entry[B any] struct {
	item   B
	cat    *tickSource
	users  atomic.Int64 // see the package invariants; dead once evicted
	pinned atomic.Bool
	// lastTick is the catalog's tick at the last Enter or Leave.
	lastTick atomic.Uint64
	counted  bool // counts towards the catalog's max
}

// tickSource is the part of the catalog an Entry reads.
type tickSource = atomic.Uint64

// New returns a Catalog that holds defaults under defaultName. kind is how
// errors name a configuration.
func New[C any, B any](kind, defaultName string, defaults C) *Catalog[C, B] {
	c := &Catalog[C, B]{kind: kind, configs: map[string]C{defaultName: defaults}}
	c.items.init()
	return c
}

// SetMax caps the number of counted items at max (0: no cap). Call it
// before the catalog is used.
func (c *Catalog[C, B]) SetMax(max int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.max = max
}

// Lock locks the catalog.
func (c *Catalog[C, B]) Lock() { c.mu.Lock() }

// Unlock unlocks the catalog.
func (c *Catalog[C, B]) Unlock() { c.mu.Unlock() }

// Item returns the entry's item.
func (e *Entry[B]) Item() B { return e.item }

// Pinned reports whether the entry is pinned (never evicted).
func (e *Entry[B]) Pinned() bool { return e.pinned.Load() }

// TryEnter adds a user unless the entry is dead (evicted), and stamps it;
// the caller then owes one Leave. Under the lock (and on a pinned entry)
// it always succeeds.
func (e *Entry[B]) TryEnter() bool {
	for {
		u := e.users.Load()
		if u == dead {
			return false
		}
		if e.users.CompareAndSwap(u, u+1) {
			e.stamp()
			return true
		}
	}
}

func (e *Entry[B]) stamp() {
	if t := e.cat.Load(); e.lastTick.Load() != t {
		e.lastTick.Store(t)
	}
}

// Leave ends one user's hold taken by Enter. It stamps the entry first, so
// that a Sweep which sees the user gone also sees the entry as just used.
// Every Enter must be followed by exactly one Leave.
func (e *Entry[B]) Leave() {
	e.stamp()
	if e.users.Add(-1) < 0 {
		panic("catalog: Leave without Enter")
	}
}

// pin turns the caller's user (from TryEnter or a creation) on the entry
// e of name into the pin, or gives it back if e is already pinned; the
// first pin also marks e's slot, so that later Gets read the map alone.
func (c *Catalog[C, B]) pin(name string, e *Entry[B]) {
	if e.pinned.Swap(true) {
		e.users.Add(-1)
		return
	}
	c.items.markPinned(name, e)
}

// Enter returns the entry named name with one more user, creating it from
// the configuration named configName if it does not exist. The caller must
// call Leave once it no longer acts on the item. It fails with ErrFull (an
// error wrapping it) if the catalog is at its cap, and as lookupLocked
// says if configName is unknown; create's error is returned as it is.
// create runs under the lock, must not call back into the catalog, and
// returns the item to store.
// configName runs only when the item is created, under the lock.
func (c *Catalog[C, B]) Enter(name string, configName func(name string) string, create func(name string, cfg C) (B, error)) (*Entry[B], error) {
	if sl, ok := c.items.load(name); ok && sl.e.TryEnter() {
		return sl.e, nil
	}
	return c.enterSlow(name, create, func() (C, error) { return c.configLocked(name, configName(name)) })
}

// Pin returns the item named name, creating it as Enter does, and pins it:
// it is never evicted. Its fast path (an existing pinned item) is one map
// lookup under its shard's read lock.
func (c *Catalog[C, B]) Pin(name, configName string, create func(name string, cfg C) (B, error)) (B, error) {
	if sl, ok := c.items.load(name); ok {
		if sl.pinned {
			return sl.item, nil
		}
		if sl.e.TryEnter() {
			c.pin(name, sl.e)
			return sl.e.item, nil
		}
	}
	e, err := c.enterSlow(name, create, func() (C, error) { return c.configLocked(name, configName) })
	if err != nil {
		var zero B
		return zero, err
	}
	c.pin(name, e)
	return e.item, nil
}

// PinWith is Pin for an item that does not exist yet being created from
// cfg rather than from a named configuration; created reports which.
func (c *Catalog[C, B]) PinWith(name string, cfg C, create func(name string, cfg C) (B, error)) (item B, created bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sl, ok := c.items.load(name); ok {
		sl.e.TryEnter() // cannot fail under mu
		c.pin(name, sl.e)
		return sl.e.item, false, nil
	}
	e, err := c.createLocked(name, cfg, create)
	if err != nil {
		return item, false, err
	}
	c.pin(name, e)
	return e.item, true, nil
}

func (c *Catalog[C, B]) enterSlow(name string, create func(string, C) (B, error), cfgOf func() (C, error)) (*Entry[B], error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sl, ok := c.items.load(name); ok {
		sl.e.TryEnter() // cannot fail under mu: a dead entry is deleted under mu
		return sl.e, nil
	}
	cfg, err := cfgOf()
	if err != nil {
		return nil, err
	}
	return c.createLocked(name, cfg, create)
}

// createLocked creates an entry with one user, if the cap allows.
func (c *Catalog[C, B]) createLocked(name string, cfg C, create func(string, C) (B, error)) (*Entry[B], error) {
	if c.max > 0 && c.counted.Load() >= int64(c.max) {
		return nil, fmt.Errorf("%w: %d items", ErrFull, c.max)
	}
	b, err := create(name, cfg)
	if err != nil {
		return nil, err
	}
	e := &Entry[B]{item: b, cat: &c.tick, counted: true}
	e.users.Store(1)
	e.lastTick.Store(c.tick.Load())
	c.items.store(name, e)
	c.counted.Add(1)
	return e, nil
}

// PutPinnedLocked stores b under name, pinned and not counted towards the
// cap (a registry's catch-all), and returns its entry.
func (c *Catalog[C, B]) PutPinnedLocked(name string, b B) *Entry[B] {
	e := &Entry[B]{item: b, cat: &c.tick}
	e.users.Store(1)
	e.pinned.Store(true)
	c.items.store(name, e)
	return e
}

// configLocked returns the configuration named configName for the item
// named name, or an error listing the known ones.
func (c *Catalog[C, B]) configLocked(name, configName string) (C, error) {
	cfg, ok := c.configs[configName]
	if !ok {
		return cfg, fmt.Errorf("bulkhead %q: unknown %s %q (known: %s)", name, c.kind, configName, strings.Join(slices.Sorted(maps.Keys(c.configs)), ", "))
	}
	return cfg, nil
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

// Find returns the item named name if it exists, and pins it.
func (c *Catalog[C, B]) Find(name string) (B, bool) {
	if sl, ok := c.items.load(name); ok {
		if sl.pinned {
			return sl.item, true
		}
		if sl.e.TryEnter() {
			c.pin(name, sl.e)
			return sl.e.item, true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sl, ok := c.items.load(name)
	if !ok {
		var zero B
		return zero, false
	}
	sl.e.TryEnter()
	c.pin(name, sl.e)
	return sl.e.item, true
}

// All returns the items in the order of their names, without pinning them.
func (c *Catalog[C, B]) All() []B {
	type named struct {
		name string
		item B
	}
	var all []named
	c.items.each(func(name string, e *Entry[B]) { all = append(all, named{name, e.item}) })
	slices.SortFunc(all, func(a, b named) int { return strings.Compare(a.name, b.name) })
	out := make([]B, len(all))
	for i, n := range all {
		out[i] = n.item
	}
	return out
}

// ItemsLocked returns the items, in no particular order.
func (c *Catalog[C, B]) ItemsLocked() []B {
	var out []B
	c.items.each(func(_ string, e *Entry[B]) { out = append(out, e.item) })
	return out
}

// FindLocked returns the item named name, without pinning it, for a caller
// that holds the lock.
func (c *Catalog[C, B]) FindLocked(name string) (B, bool) {
	sl, ok := c.items.load(name)
	return sl.item, ok
}

// RemoveLocked forgets the item named name, whatever its users, and
// returns it.
func (c *Catalog[C, B]) RemoveLocked(name string) (B, bool) {
	e, ok := c.items.remove(name)
	if !ok {
		var zero B
		return zero, false
	}
	if e.counted {
		c.counted.Add(-1)
	}
	return e.item, true
}

// Len returns the number of items, counted or not.
func (c *Catalog[C, B]) Len() int {
	n := 0
	c.items.each(func(string, *Entry[B]) { n++ })
	return n
}

// Counted returns the number of items that count towards the cap.
func (c *Catalog[C, B]) Counted() int { return int(c.counted.Load()) }

// Evictions returns the number of items Sweep has evicted.
func (c *Catalog[C, B]) Evictions() uint64 { return c.evictions.Load() }

// Sweep advances the tick and evicts every unpinned entry that has had no
// user for the last idleTicks ticks or more (its last Enter or Leave was
// stamped with a tick at least idleTicks+1 below the new one), calling
// evictedLocked for each under the lock, after it is gone from the map.
// keep may veto an eviction (it runs under the lock with users dead, so no
// new user can appear). It returns how many unpinned entries remain.
func (c *Catalog[C, B]) Sweep(idleTicks uint64, keep func(B) bool, evictedLocked func(name string, b B)) (unpinned int) {
	now := c.tick.Add(1)
	c.items.each(func(name string, e *Entry[B]) {
		if e.pinned.Load() {
			return
		}
		if e.users.Load() != 0 || now-e.lastTick.Load() <= idleTicks {
			unpinned++
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if !e.users.CompareAndSwap(0, dead) {
			unpinned++
			return
		}
		// A user may have come and gone since the check above: then the
		// entry is not idle after all.
		if now-e.lastTick.Load() <= idleTicks || keep(e.item) {
			e.users.Store(0)
			unpinned++
			return
		}
		c.items.remove(name)
		if e.counted {
			c.counted.Add(-1)
		}
		c.evictions.Add(1)
		evictedLocked(name, e.item)
	})
	return unpinned
}

// GetOrCreate returns the item named name, or creates it under the lock
// from the configuration named configName with create, which must not call
// back into the catalog and registers the item with PutLocked if it wants
// it kept. Items it returns are pinned. It is the older form of Pin, for a
// registry (contrib/redis) that registers its items itself.
func (c *Catalog[C, B]) GetOrCreate(name, configName string, create func(name string, cfg C) (B, error)) (B, error) {
	if sl, ok := c.items.load(name); ok && sl.pinned {
		return sl.item, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if sl, ok := c.items.load(name); ok {
		sl.e.TryEnter() // cannot fail under mu
		c.pin(name, sl.e)
		return sl.e.item, nil
	}
	cfg, err := c.configLocked(name, configName)
	if err != nil {
		var zero B
		return zero, err
	}
	return create(name, cfg)
}

// PutLocked registers b under name, pinned and counted towards the cap,
// replacing any item of that name.
func (c *Catalog[C, B]) PutLocked(name string, b B) {
	e := &Entry[B]{item: b, cat: &c.tick, counted: true}
	e.users.Store(1)
	e.pinned.Store(true)
	if old, replaced := c.items.store(name, e); !replaced || !old.counted {
		c.counted.Add(1)
	}
}
