package catalog

import (
	"hash/maphash"
	"sync"
)

// shardCount is the number of shards of an item map: enough that two
// cores rarely read the same shard's lock, few enough that an empty
// catalog stays small.
const shardCount = 64

// shards is the name -> entry map of a Catalog, split into shards by a
// hash of the name so that readers of different names on different cores
// touch different locks. Each shard is a plain Go map (one or two cache
// misses per lookup at a million names) under a read-write lock held only
// for the lookup or the change itself. Changes also need the catalog's
// mu (see the package invariants); a shard's lock only keeps its map
// consistent for concurrent readers.
type shards[B any] struct {
	seed maphash.Seed
	s    [shardCount]shard[B]
}

type shard[B any] struct {
	mu sync.RWMutex
	m  map[string]slot[B]
	_  [64 - 32]byte // one cache line per shard's lock and map pointer
}

// slot is what the map holds for a name: the entry, and a copy of its item
// and of its pinned flag, so that the fast path of Get (a pinned item)
// reads the map alone, without touching the entry.
type slot[B any] struct {
	e      *Entry[B]
	item   B
	pinned bool
}

func (m *shards[B]) init() { m.seed = maphash.MakeSeed() }

func (m *shards[B]) shard(name string) *shard[B] {
	return &m.s[maphash.String(m.seed, name)%shardCount]
}

// load returns the slot of name.
func (m *shards[B]) load(name string) (slot[B], bool) {
	sh := m.shard(name)
	sh.mu.RLock()
	s, ok := sh.m[name]
	sh.mu.RUnlock()
	return s, ok
}

// store sets the entry of name and returns the one it replaced.
func (m *shards[B]) store(name string, e *Entry[B]) (old *Entry[B], replaced bool) {
	sh := m.shard(name)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m == nil {
		sh.m = map[string]slot[B]{}
	}
	prev, ok := sh.m[name]
	sh.m[name] = slot[B]{e: e, item: e.item, pinned: e.pinned.Load()}
	return prev.e, ok
}

// markPinned records in the slot of name that e is pinned, if e is still
// the entry of name.
func (m *shards[B]) markPinned(name string, e *Entry[B]) {
	sh := m.shard(name)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s, ok := sh.m[name]; ok && s.e == e && !s.pinned {
		s.pinned = true
		sh.m[name] = s
	}
}

// remove deletes name and returns its entry.
func (m *shards[B]) remove(name string) (*Entry[B], bool) {
	sh := m.shard(name)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s, ok := sh.m[name]
	delete(sh.m, name)
	return s.e, ok
}

// each calls f with every name and entry, one shard at a time, from a
// snapshot of the shard taken under its read lock, so f may take the
// catalog's mu and change the map. Names stored or removed meanwhile may
// or may not be visited.
func (m *shards[B]) each(f func(name string, e *Entry[B])) {
	type named struct {
		name string
		e    *Entry[B]
	}
	var snap []named
	for i := range m.s {
		sh := &m.s[i]
		snap = snap[:0]
		sh.mu.RLock()
		for name, s := range sh.m {
			snap = append(snap, named{name, s.e})
		}
		sh.mu.RUnlock()
		for _, n := range snap {
			f(n.name, n.e)
		}
	}
}
