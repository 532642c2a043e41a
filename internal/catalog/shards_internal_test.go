package catalog

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

func newTestShards() *shards[int] {
	var m shards[int]
	m.init()
	return &m
}

func entryOf(name string, item int) *Entry[int] { return &Entry[int]{name: name, item: item} }

// TestTableAgreesWithAMapThroughGrowthRemovalAndReuse drives one table with
// random stores and removes (growing it, leaving tombstones, reusing them
// and compacting them away) and checks every lookup against a Go map.
func TestTableAgreesWithAMapThroughGrowthRemovalAndReuse(t *testing.T) {
	m := newTestShards()
	want := map[string]int{}
	rng := rand.New(rand.NewPCG(3, 4))
	names := make([]string, 3000)
	for i := range names {
		names[i] = fmt.Sprint("n", i)
	}
	for step := range 200_000 {
		name := names[rng.IntN(len(names))]
		if rng.IntN(3) == 0 {
			e, ok := m.remove(name)
			w, had := want[name]
			if ok != had || (ok && e.item != w) {
				t.Fatalf("step %d: remove(%s) = %v, %v; want %d, %v", step, name, e, ok, w, had)
			}
			delete(want, name)
		} else {
			old, replaced := m.store(entryOf(name, step))
			w, had := want[name]
			if replaced != had || (replaced && old.item != w) {
				t.Fatalf("step %d: store(%s) replaced %v, %v; want %d, %v", step, name, old, replaced, w, had)
			}
			want[name] = step
		}
		probe := names[rng.IntN(len(names))]
		e := m.load(probe)
		if w, ok := want[probe]; ok != (e != nil) || (ok && (e.item != w || e.name != probe)) {
			t.Fatalf("step %d: load(%s) = %v; want %d, %v", step, probe, e, w, ok)
		}
	}
	if n := m.count(); n != len(want) {
		t.Fatalf("count = %d, want %d", n, len(want))
	}
	for i := range m.tables {
		if tb := m.tables[i].Load(); tb != nil {
			nils := 0
			for j := range tb.slots {
				if tb.slots[j].e.Load() == nil {
					nils++
				}
			}
			if nils != len(tb.slots)-tb.used || tb.used*4 > len(tb.slots)*3 {
				t.Fatalf("shard %d: %d of %d slots nil, %d live, %d used: a probe could run for ever", i, nils, len(tb.slots), tb.live, tb.used)
			}
		}
	}
}

// TestLockFreeReadersAlwaysFindANameThatIsNeverRemoved reads a set of
// stable names, without a lock, while a writer grows, fills and empties the
// same tables with other names: a reader must find every stable name every
// time, and never get an entry for another name.
func TestLockFreeReadersAlwaysFindANameThatIsNeverRemoved(t *testing.T) {
	m := newTestShards()
	var mu sync.Mutex // the writers' lock (the catalog's mu)
	stable := make([]string, 200)
	for i := range stable {
		stable[i] = fmt.Sprint("stable-", i)
		m.store(entryOf(stable[i], i))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			for i := r; !stop.Load(); i++ {
				name := stable[i%len(stable)]
				if e := m.load(name); e == nil || e.name != name || e.item != i%len(stable) {
					t.Errorf("load(%s) = %v during writes", name, e)
					return
				}
				if e := m.load(fmt.Sprint("never-", i)); e != nil {
					t.Errorf("load of a name never stored = %v", e)
					return
				}
			}
		})
	}
	for round := range 20 {
		mu.Lock()
		for i := range 2000 {
			m.store(entryOf(fmt.Sprint("churn-", round, "-", i), -1))
		}
		mu.Unlock()
		mu.Lock()
		for i := range 2000 {
			m.remove(fmt.Sprint("churn-", round, "-", i))
		}
		mu.Unlock()
	}
	stop.Store(true)
	wg.Wait()
}
