package catalog

import (
	"hash/maphash"
	"sync/atomic"
)

// shardBits is log2 of the number of shards of the item table. Shards keep
// a growth short: a table that outgrows its slots is copied whole, so at a
// million names one growth copies about 16,000 slots, not a million, while
// the catalog's lock is held.
const (
	shardBits  = 6
	shardCount = 1 << shardBits
)

// shards is the name -> entry table of a Catalog: an open-addressing hash
// table (linear probing) per shard, read without any lock.
//
// Invariants:
//   - Writers (store, remove) run under the catalog's mu, one at a time;
//     readers (load, each) take no lock at all.
//   - A name is hashed once per lookup: the top shardBits bits of the hash
//     pick the shard, the low bits the first slot to probe.
//   - A slot only ever goes nil -> entry -> tomb -> entry -> tomb ...; its
//     hash is stored before its entry, so a reader that loads an entry
//     then its hash sees at least that entry's hash. A reader that loads a
//     slot while it is reused may compare a name with an entry that is
//     being removed, or skip one: that is a lookup ordered before or after
//     the change, and every caller that acts on a miss, or on a removed
//     (dead) entry, does it again under mu.
//   - A table that would have fewer than a quarter of its slots nil is
//     replaced by a new one (entries copied, tombstones dropped) published
//     with one atomic store; readers of the old one still see every entry
//     it held until then, and misses fall back to mu as above. So every
//     probe ends at a nil slot.
type shards[B any] struct {
	seed   maphash.Seed
	tomb   *Entry[B] // marks a removed entry's slot
	tables [shardCount]atomic.Pointer[table[B]]
}

// table is one shard's slots. Its counts are the writers'.
type table[B any] struct {
	mask  uint64
	live  int // entries
	used  int // entries and tombstones
	slots []tableSlot[B]
}

type tableSlot[B any] struct {
	hash atomic.Uint64
	e    atomic.Pointer[Entry[B]]
}

const minSlots = 8

func (m *shards[B]) init() {
	m.seed = maphash.MakeSeed()
	m.tomb = new(Entry[B])
}

func (m *shards[B]) hash(name string) uint64 { return maphash.String(m.seed, name) }

// load returns the entry of name, or nil. It takes no lock and writes no
// memory.
func (m *shards[B]) load(name string) *Entry[B] {
	h := m.hash(name)
	t := m.tables[h>>(64-shardBits)].Load()
	if t == nil {
		return nil
	}
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		e := s.e.Load()
		if e == nil {
			return nil
		}
		if s.hash.Load() == h && e.name == name && e != m.tomb {
			return e
		}
	}
}

// store sets the entry of name (e.name) and returns the one it replaced.
// The caller holds the catalog's mu.
func (m *shards[B]) store(e *Entry[B]) (old *Entry[B], replaced bool) {
	h := m.hash(e.name)
	sh := &m.tables[h>>(64-shardBits)]
	t := sh.Load()
	if t == nil || (t.used+1)*4 > len(t.slots)*3 {
		t = m.regrow(t)
		sh.Store(t)
	}
	free := -1
	i := h & t.mask
	for ; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		x := s.e.Load()
		if x == nil {
			break
		}
		if x == m.tomb {
			if free < 0 {
				free = int(i)
			}
			continue
		}
		if s.hash.Load() == h && x.name == e.name {
			s.e.Store(e)
			return x, true
		}
	}
	if free >= 0 {
		i = uint64(free)
	} else {
		t.used++
	}
	t.live++
	t.slots[i].hash.Store(h)
	t.slots[i].e.Store(e)
	return nil, false
}

// regrow returns a new table for the live entries of t and one more, at
// most half full.
func (m *shards[B]) regrow(t *table[B]) *table[B] {
	n := minSlots
	live := 0
	if t != nil {
		live = t.live
	}
	for n < (live+1)*2 {
		n *= 2
	}
	nt := &table[B]{mask: uint64(n - 1), slots: make([]tableSlot[B], n)}
	if t == nil {
		return nt
	}
	for i := range t.slots {
		s := &t.slots[i]
		if e := s.e.Load(); e != nil && e != m.tomb {
			h := s.hash.Load()
			j := h & nt.mask
			for nt.slots[j].e.Load() != nil {
				j = (j + 1) & nt.mask
			}
			nt.slots[j].hash.Store(h)
			nt.slots[j].e.Store(e)
			nt.live++
			nt.used++
		}
	}
	return nt
}

// remove deletes name and returns its entry. The caller holds the
// catalog's mu.
func (m *shards[B]) remove(name string) (*Entry[B], bool) {
	h := m.hash(name)
	t := m.tables[h>>(64-shardBits)].Load()
	if t == nil {
		return nil, false
	}
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		e := s.e.Load()
		if e == nil {
			return nil, false
		}
		if e != m.tomb && s.hash.Load() == h && e.name == name {
			s.e.Store(m.tomb)
			t.live--
			return e, true
		}
	}
}

// each calls f with every entry, one shard at a time, from a snapshot of
// the shard's table taken without a lock, so f may take the catalog's mu
// and change the table. Entries stored or removed meanwhile may or may not
// be visited.
func (m *shards[B]) each(f func(e *Entry[B])) {
	var snap []*Entry[B]
	for i := range m.tables {
		t := m.tables[i].Load()
		if t == nil {
			continue
		}
		snap = snap[:0]
		for j := range t.slots {
			if e := t.slots[j].e.Load(); e != nil && e != m.tomb {
				snap = append(snap, e)
			}
		}
		for _, e := range snap {
			f(e)
		}
	}
}

// count returns the number of entries, read without a lock.
func (m *shards[B]) count() int {
	n := 0
	m.each(func(*Entry[B]) { n++ })
	return n
}
