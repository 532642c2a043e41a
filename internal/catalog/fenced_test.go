package catalog_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rxbulkhead/bulkhead/internal/catalog"
)

// item stands for a Semaphore: it counts its own use under its own lock.
type item struct {
	name  string
	mu    sync.Mutex
	inUse int
}

func (it *item) use(d int) {
	it.mu.Lock()
	it.inUse += d
	it.mu.Unlock()
}

func inUse(it *item) bool {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.inUse > 0
}

func newFencedCatalog() *catalog.Catalog[int, *item] {
	c := catalog.New[int, *item]("config", "default", 1)
	c.SetCreate(func(e *catalog.Entry[*item], _ int) (*item, error) { return &item{name: e.Name()}, nil })
	return c
}

func TestKeptTellsAnEvictedEntryFromOneTheSweepKept(t *testing.T) {
	c := newFencedCatalog()
	e, err := c.LookupOrCatchAll("a", "")
	if err != nil || !c.Kept(e) {
		t.Fatalf("LookupOrCatchAll = %v, %v; Kept %v", e, err, c.Kept(e))
	}
	e.Item().use(1) // in use: every sweep keeps it
	for range 4 {
		c.Sweep(0, inUse, func(string, *item) { t.Fatal("evicted an item in use") })
	}
	if !c.Kept(e) || c.Lookup("a") != e {
		t.Fatal("an entry the sweep kept is not Kept")
	}
	e.Item().use(-1)
	c.Sweep(0, inUse, func(string, *item) {})
	if c.Kept(e) || c.Lookup("a") != nil {
		t.Fatal("an evicted entry is Kept, or still found")
	}
	again, _ := c.LookupOrCatchAll("a", "")
	if again == e || again.Item() == e.Item() {
		t.Fatal("the next lookup did not create a new item")
	}
}

// TestFencedUsersAndSweepsNeverLeaveANameWithTwoItemsInUse hammers the
// fenced path: users look a few names up, put the item in use under its
// lock, then ask Kept (undoing and starting again when told no), while a
// sweep evicts every entry whose item is not in use. No name may ever have
// two items in use at once, and every user's item must be the one its
// name's entry holds while the user holds it.
func TestFencedUsersAndSweepsNeverLeaveANameWithTwoItemsInUse(t *testing.T) {
	c := newFencedCatalog()
	names := []string{"a", "b", "c"}
	var mu sync.Mutex
	using := map[string]map[*item]int{} // name -> items in use -> users
	var undone, used atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := names[(i+w)%len(names)]
				var it *item
				var held *catalog.Entry[*item]
				for {
					e, err := c.LookupOrCatchAll(name, "")
					if err != nil {
						t.Error(err)
						return
					}
					e.Stamp()
					e.Item().use(1)
					if c.Kept(e) {
						it, held = e.Item(), e
						break
					}
					e.Item().use(-1) // evicted under us: undo, go again
					undone.Add(1)
				}
				mu.Lock()
				if using[name] == nil {
					using[name] = map[*item]int{}
				}
				using[name][it]++
				if len(using[name]) > 1 {
					t.Errorf("%s has %d items in use at once", name, len(using[name]))
				}
				mu.Unlock()
				runtime.Gosched() // hold it while others come
				if !c.Kept(held) {
					t.Errorf("a user of %s holds an item whose entry was evicted", name)
				}
				mu.Lock()
				if using[name][it]--; using[name][it] == 0 {
					delete(using[name], it)
				}
				mu.Unlock()
				it.use(-1)
				used.Add(1)
			}
		})
	}
	evictions := 0
	for evictions < 200 || used.Load() < 2000 {
		c.Sweep(0, inUse, func(string, *item) { evictions++ })
	}
	close(stop)
	wg.Wait()
	t.Logf("%d uses, %d evictions, %d undone acts", used.Load(), evictions, undone.Load())
}
