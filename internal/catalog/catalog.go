// Package catalog is what bulkhead.Registry and pool.Registry share: a set
// of named configurations and one item (a Semaphore or a Pool) per name,
// with a read path that takes no lock at all (the items live in 64
// open-addressing hash tables read with atomic loads, shards.go), an
// optional cap on the number of items and idle eviction.
//
// Invariants:
//   - mu guards configs and every change of the set of items: a creation
//     (store) and an eviction (the CAS of users 0 -> dead and the remove
//     that follows) both happen under mu, so under mu an item found in the
//     table is never dead. Readers take no lock: a reader that finds no
//     entry, or a dead one, looks again under mu before it acts.
//   - An entry's pinned flag is only ever set, after the pinning user is
//     counted in users: a reader that sees it may return the item without
//     counting itself.
//   - Entry.users counts who may still act on an unpinned item through
//     the catalog: one per Enter until its Leave. Pinning keeps the
//     pinner's count for ever (so a pinned entry's count never returns to
//     0), and from then on Enter and Leave count nothing.
//     Sweep's CAS from 0 to dead (a large negative number) and TryEnter's
//     atomic add of 1 are the single decision between an eviction and a new
//     user: an add that returns a positive count made a user the sweep will
//     see (its CAS fails and it skips the entry); one that returns a count
//     at or below dead+n found the entry evicted, undoes its add and looks
//     the name up again, under mu, where the dead entry is gone or (if the
//     sweep kept it after all) alive again. A sweep that keeps an entry it
//     made dead adds -dead back, so the undone adds leave the count exact.
//   - A pinned entry has users >= 1 forever, so it is never evicted; an
//     entry is pinned only after its pinner counted itself in (or at its
//     creation, with users 1).
//   - The fenced path (fenced.go) counts no user: Sweep's keep func, which
//     reads the item's own count of its use under the item's lock, decides
//     instead, and the caller asks Kept after acting on the item.
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

// dead is Entry.users of an evicted entry: so far below zero that the
// adds of TryEnters that find the entry dead never lift it near zero.
const dead = -1 << 62

// Catalog maps names to configurations C and to items B. It is safe for
// concurrent use; the ...Locked methods need the caller to hold Lock, which
// also guards whatever the owning registry keeps next to it.
type Catalog[C any, B any] struct {
	kind string // how errors name a configuration: "config", "pool config"

	items shards[B] // name -> entry; read without a lock, changed under mu
	// counted is the number of items that count towards max (all but
	// those stored with PutPinnedLocked).
	counted atomic.Int64
	// tick is the sweep count, stamped on entries when they are used.
	tick      atomic.Uint64
	evictions atomic.Uint64

	mu          sync.Mutex
	configs     map[string]C
	defaultName string
	// keyConfig picks the configuration of an item Enter creates when the
	// caller names none (SetKeyConfig); nil: defaultName.
	keyConfig func(name string) string
	// create makes a new item (SetCreate); it runs under mu.
	create func(e *Entry[B], cfg C) (B, error)
	// max is the cap on counted items (0: none). Set before use, read
	// without mu.
	max int

	catchAll      *catchAll[B] // nil: none (catchall.go)
	catchAllCalls atomic.Uint64
}

// Entry is one item, its name and its users. Its methods are safe for
// concurrent use. Everything a keyed call touches (name, item, users, the
// tick) sits in one cache line.
type Entry[B any] struct {
	item  B
	users atomic.Int64 // see the package invariants; dead once evicted
	// lastTick is the catalog's tick at the last Leave (or creation).
	lastTick atomic.Uint64
	cat      *tickSource
	name     string
	pinned   atomic.Bool
	counted  bool // counts towards the catalog's max
}

// tickSource is the part of the catalog an Entry reads.
type tickSource = atomic.Uint64

// New returns a Catalog that holds defaults under defaultName. kind is how
// errors name a configuration.
func New[C any, B any](kind, defaultName string, defaults C) *Catalog[C, B] {
	c := &Catalog[C, B]{kind: kind, configs: map[string]C{defaultName: defaults}, defaultName: defaultName}
	c.items.init()
	return c
}

// SetCreate sets the func that makes the items Enter, EnterOrCatchAll,
// LookupOrCatchAll, Pin and PinWith create. It gets the new entry (its Name
// set, its Item not yet: the item create returns) and the configuration,
// runs under the lock, and must not call back into the catalog. Call it
// before the catalog is used.
func (c *Catalog[C, B]) SetCreate(create func(e *Entry[B], cfg C) (B, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.create = create
}

// SetKeyConfig makes Enter create an item for which the caller names no
// configuration from the configuration named configName(name) rather than
// the default one. configName runs without the lock (it may call into the
// catalog's owner), only when Enter finds no live item. Call it before the
// catalog is used.
func (c *Catalog[C, B]) SetKeyConfig(configName func(name string) string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keyConfig = configName
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

// Name returns the entry's name.
func (e *Entry[B]) Name() string { return e.name }

// TryEnter adds a user unless the entry is dead (evicted); the caller then
// owes one Leave. Under the lock (and on a pinned entry) it always
// succeeds. On an unpinned entry it is one atomic add (no load, no retry
// loop); on a pinned one it counts nothing and writes nothing (a pinned
// entry is never evicted, so nobody reads its count). It does not stamp the
// entry: an entry with a user is never idle, and Leave stamps it when the
// user goes.
func (e *Entry[B]) TryEnter() bool {
	if e.pinned.Load() {
		return true
	}
	if e.users.Add(1) > 0 {
		return true
	}
	e.users.Add(-1) // dead: undo (see the package invariants)
	return false
}

// Stamp records that the entry is in use now, so that Sweep does not take
// it for idle before idleTicks more sweeps. It writes only when the tick
// changed since the last stamp.
func (e *Entry[B]) Stamp() {
	if t := e.cat.Load(); e.lastTick.Load() != t {
		e.lastTick.Store(t)
	}
}

// Dead reports whether a Sweep has made the entry dead: for good (it is
// evicted, gone from the catalog), or while it decides (see Kept).
func (e *Entry[B]) Dead() bool { return e.users.Load() < 0 }

// Leave ends one user's hold taken by Enter. It stamps the entry first, so
// that a Sweep which sees the user gone also sees the entry as just used.
// Every Enter must be followed by exactly one Leave. On a pinned entry it
// does nothing (a user counted before the pin stays counted: harmless, as
// nobody reads a pinned entry's count).
func (e *Entry[B]) Leave() {
	if e.pinned.Load() {
		return
	}
	e.Stamp()
	if e.users.Add(-1) < 0 {
		panic("catalog: Leave without Enter")
	}
}

// pin pins e, whose caller has entered it (TryEnter, under the lock or on
// a live entry, or a creation): that user, if counted, stays counted for
// ever, so that Sweep's CAS from 0 can never succeed on a pinned entry
// whatever the order in which it read the flag.
func (c *Catalog[C, B]) pin(e *Entry[B]) {
	e.pinned.Store(true)
}

// Enter returns the entry named name with one more user, creating it from
// the configuration named configName if it does not exist ("": the one
// SetKeyConfig picks, or the default). The caller must call Leave once it
// no longer acts on the item. It fails with ErrFull (an error wrapping it)
// if the catalog is at its cap, and as configLocked says if configName is
// unknown; SetCreate's error is returned as it is. Its fast path (a live
// item) is one lookup and one atomic add, with no lock and no allocation.
func (c *Catalog[C, B]) Enter(name, configName string) (*Entry[B], error) {
	if e := c.items.load(name); e != nil && e.TryEnter() {
		return e, nil
	}
	return c.enterSlow(name, c.configNameFor(name, configName))
}

// configNameFor resolves "" to the configuration SetKeyConfig picks for
// name, or the default; it runs SetKeyConfig's func without the lock.
func (c *Catalog[C, B]) configNameFor(name, configName string) string {
	if configName != "" {
		return configName
	}
	if c.keyConfig != nil {
		return c.keyConfig(name)
	}
	return c.defaultName
}

// Pin returns the item named name, creating it as Enter does, and pins it:
// it is never evicted. Its fast path (an existing pinned item) is one
// lookup, with no lock and no write to shared memory.
func (c *Catalog[C, B]) Pin(name, configName string) (B, error) {
	if e := c.items.load(name); e != nil {
		if e.pinned.Load() {
			return e.item, nil
		}
		if e.TryEnter() {
			c.pin(e)
			return e.item, nil
		}
	}
	e, err := c.enterSlow(name, configName)
	if err != nil {
		var zero B
		return zero, err
	}
	c.pin(e)
	return e.item, nil
}

// PinWith is Pin for an item that does not exist yet being created from
// cfg rather than from a named configuration; created reports which.
func (c *Catalog[C, B]) PinWith(name string, cfg C) (item B, created bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.items.load(name); e != nil {
		e.TryEnter() // cannot fail under mu
		c.pin(e)
		return e.item, false, nil
	}
	e, err := c.createLocked(name, cfg, 1)
	if err != nil {
		return item, false, err
	}
	c.pin(e)
	return e.item, true, nil
}

// enterSlow is Enter and Pin under the lock: the item of name with one more
// user, created from the configuration named configName if there is none.
func (c *Catalog[C, B]) enterSlow(name, configName string) (*Entry[B], error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.items.load(name); e != nil {
		e.TryEnter() // cannot fail under mu: a dead entry is deleted under mu
		return e, nil
	}
	cfg, err := c.configLocked(name, configName)
	if err != nil {
		return nil, err
	}
	return c.createLocked(name, cfg, 1)
}

// createLocked creates an entry with users users (1 for Enter and Pin, 0
// for LookupOrCatchAll), if the cap allows.
func (c *Catalog[C, B]) createLocked(name string, cfg C, users int64) (*Entry[B], error) {
	if c.max > 0 && c.counted.Load() >= int64(c.max) {
		return nil, fmt.Errorf("%w: %d items", ErrFull, c.max)
	}
	e := &Entry[B]{cat: &c.tick, name: name, counted: true}
	b, err := c.create(e, cfg)
	if err != nil {
		return nil, err
	}
	e.item = b
	e.users.Store(users)
	e.lastTick.Store(c.tick.Load())
	c.items.store(e)
	c.counted.Add(1)
	return e, nil
}

// PutPinnedLocked stores b under name, pinned and not counted towards the
// cap (a registry's catch-all), and returns its entry.
func (c *Catalog[C, B]) PutPinnedLocked(name string, b B) *Entry[B] {
	e := &Entry[B]{item: b, cat: &c.tick, name: name}
	e.users.Store(1)
	e.pinned.Store(true)
	c.items.store(e)
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
	if e := c.items.load(name); e != nil {
		if e.pinned.Load() {
			return e.item, true
		}
		if e.TryEnter() {
			c.pin(e)
			return e.item, true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.items.load(name)
	if e == nil {
		var zero B
		return zero, false
	}
	e.TryEnter()
	c.pin(e)
	return e.item, true
}

// All returns the items in the order of their names, without pinning them.
func (c *Catalog[C, B]) All() []B {
	type named struct {
		name string
		item B
	}
	var all []named
	c.items.each(func(e *Entry[B]) { all = append(all, named{e.name, e.item}) })
	slices.SortFunc(all, func(a, b named) int { return strings.Compare(a.name, b.name) })
	out := make([]B, len(all))
	for i, n := range all {
		out[i] = n.item
	}
	return out
}

// EntriesLocked returns the entries, in no particular order.
func (c *Catalog[C, B]) EntriesLocked() []*Entry[B] {
	var out []*Entry[B]
	c.items.each(func(e *Entry[B]) { out = append(out, e) })
	return out
}

// ItemsLocked returns the items, in no particular order.
func (c *Catalog[C, B]) ItemsLocked() []B {
	var out []B
	c.items.each(func(e *Entry[B]) { out = append(out, e.item) })
	return out
}

// FindLocked returns the item named name, without pinning it, for a caller
// that holds the lock.
func (c *Catalog[C, B]) FindLocked(name string) (B, bool) {
	if e := c.items.load(name); e != nil {
		return e.item, true
	}
	var zero B
	return zero, false
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
func (c *Catalog[C, B]) Len() int { return c.items.count() }

// Counted returns the number of items that count towards the cap.
func (c *Catalog[C, B]) Counted() int { return int(c.counted.Load()) }

// Evictions returns the number of items Sweep has evicted.
func (c *Catalog[C, B]) Evictions() uint64 { return c.evictions.Load() }

// Sweep advances the tick and evicts every unpinned entry that has had no
// user for the last idleTicks ticks or more (its last Enter or Leave was
// stamped with a tick at least idleTicks+1 below the new one), calling
// evictedLocked for each under the lock, after it is gone from the map.
// keep may veto an eviction: it runs under the lock with users dead, so no
// new counted user can appear, and it is what keeps an entry used through
// the fenced path (fenced.go). It returns how many unpinned entries remain.
func (c *Catalog[C, B]) Sweep(idleTicks uint64, keep func(B) bool, evictedLocked func(name string, b B)) (unpinned int) {
	now := c.tick.Add(1)
	c.items.each(func(e *Entry[B]) {
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
			e.users.Add(-dead) // alive again; failed TryEnters undo their own adds
			unpinned++
			return
		}
		c.items.remove(e.name)
		if e.counted {
			c.counted.Add(-1)
		}
		c.evictions.Add(1)
		evictedLocked(e.name, e.item)
	})
	return unpinned
}

// GetOrCreate returns the item named name, or creates it under the lock
// from the configuration named configName with create, which must not call
// back into the catalog and registers the item with PutLocked if it wants
// it kept. Items it returns are pinned. It is the older form of Pin, for a
// registry (contrib/redis) that registers its items itself.
func (c *Catalog[C, B]) GetOrCreate(name, configName string, create func(name string, cfg C) (B, error)) (B, error) {
	if e := c.items.load(name); e != nil && e.pinned.Load() {
		return e.item, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.items.load(name); e != nil {
		e.TryEnter() // cannot fail under mu
		c.pin(e)
		return e.item, nil
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
	e := &Entry[B]{item: b, cat: &c.tick, name: name, counted: true}
	e.users.Store(1)
	e.pinned.Store(true)
	if old, replaced := c.items.store(e); !replaced || !old.counted {
		c.counted.Add(1)
	}
}
