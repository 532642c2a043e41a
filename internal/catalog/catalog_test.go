package catalog_test

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rxbulkhead/bulkhead/internal/catalog"
)

func newCatalog() (*catalog.Catalog[int, string], *int) {
	c := catalog.New[int, string]("config", "default", 1)
	c.SetConfig("big", 50)
	created := new(int)
	c.SetCreate(func(e *catalog.Entry[string], cfg int) (string, error) {
		*created++
		return e.Name() + "/" + string(rune('0'+cfg%10)), nil
	})
	return c, created
}

func TestPinCreatesOncePerNameFromTheNamedConfig(t *testing.T) {
	c, created := newCatalog()
	a, err := c.Pin("a", "default")
	if err != nil || a != "a/1" {
		t.Fatalf("Pin = %q, %v", a, err)
	}
	again, _ := c.Pin("a", "big")
	if again != a || *created != 1 {
		t.Fatalf("second Pin = %q after %d creations, want the existing item", again, *created)
	}
	if _, err := c.Pin("b", "huge"); err == nil || err.Error() != `bulkhead "b": unknown config "huge" (known: big, default)` {
		t.Fatalf("unknown config: %v", err)
	}
	if _, ok := c.Find("b"); ok {
		t.Fatal("a failed creation registered an item")
	}
	c.Pin("0", "big")
	if all := c.All(); !slices.Equal(all, []string{"0/0", "a/1"}) {
		t.Fatalf("All = %v, want sorted by name", all)
	}
	c.Lock()
	b, ok := c.RemoveLocked("a")
	_, still := c.FindLocked("a")
	c.Unlock()
	if !ok || b != "a/1" || still || c.Counted() != 1 {
		t.Fatalf("RemoveLocked = %q, %v; still there %v; counted %d", b, ok, still, c.Counted())
	}
}

func never(string) bool { return false }

func TestSweepEvictsOnlyEntriesWithoutUsersIdleForTheGivenTicks(t *testing.T) {
	c, _ := newCatalog()
	var evicted []string
	onEvict := func(name string, _ string) { evicted = append(evicted, name) }
	idle, _ := c.Enter("idle", "")
	idle.Leave()
	held, _ := c.Enter("held", "")
	c.Pin("pinned", "default")
	c.Sweep(2, never, onEvict) // tick 1
	c.Sweep(2, never, onEvict) // tick 2
	if len(evicted) != 0 {
		t.Fatalf("evicted %v after two ticks, want none before idleTicks have passed", evicted)
	}
	if left := c.Sweep(2, never, onEvict); left != 1 || !slices.Equal(evicted, []string{"idle"}) {
		t.Fatalf("third sweep evicted %v and left %d unpinned, want [idle] and 1 (held)", evicted, left)
	}
	if idle.TryEnter() {
		t.Fatal("TryEnter succeeded on an evicted entry")
	}
	held.Leave()
	for range 3 {
		c.Sweep(2, never, onEvict)
	}
	if !slices.Equal(evicted, []string{"idle", "held"}) || c.Evictions() != 2 {
		t.Fatalf("evicted %v (%d), want held once its user left and it idled", evicted, c.Evictions())
	}
	if _, ok := c.Find("pinned"); !ok || c.Counted() != 1 {
		t.Fatalf("the pinned entry was evicted (counted %d)", c.Counted())
	}
}

func TestSweepKeepsAnEntryVetoedOrUsedSinceTheCheck(t *testing.T) {
	c, _ := newCatalog()
	e, _ := c.Enter("k", "")
	e.Leave()
	for range 5 {
		c.Sweep(2, func(string) bool { return true }, func(string, string) { t.Fatal("evicted a vetoed entry") })
	}
	if !e.TryEnter() {
		t.Fatal("a vetoed entry was left dead")
	}
	e.Leave()
}

func TestEnterFailsWithErrFullAtTheCapAndPinnedPutsDoNotCount(t *testing.T) {
	c, _ := newCatalog()
	c.SetMax(2)
	c.Lock()
	c.PutPinnedLocked("catch-all", "ca")
	c.Unlock()
	a, err := c.Enter("a", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pin("b", "default"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enter("c", ""); !errors.Is(err, catalog.ErrFull) {
		t.Fatalf("Enter beyond the cap = %v, want ErrFull", err)
	}
	if again, err := c.Enter("a", ""); err != nil || again != a {
		t.Fatalf("Enter of an existing name at the cap = %v, %v", again, err)
	}
	a.Leave()
	a.Leave()
	for range 3 {
		c.Sweep(2, never, func(string, string) {})
	}
	if _, err := c.Enter("c", ""); err != nil {
		t.Fatalf("Enter after an eviction freed room: %v", err)
	}
}

func TestLeaveWithoutEnterPanics(t *testing.T) {
	c, _ := newCatalog()
	e, _ := c.Enter("a", "")
	e.Leave()
	defer func() {
		if recover() == nil {
			t.Fatal("a second Leave did not panic")
		}
	}()
	e.Leave()
}

// TestEnterAndSweepNeverHandOutAnEvictedEntry races users of few names
// against sweeps that evict whatever has no user: an entry a user holds must
// be the one in the map for its name all along (so one name never has two
// live entries), and TryEnter never revives an evicted one.
func TestEnterAndSweepNeverHandOutAnEvictedEntry(t *testing.T) {
	c := catalog.New[int, *int]("config", "default", 1)
	c.SetCreate(func(*catalog.Entry[*int], int) (*int, error) { return new(int), nil })
	names := []string{"a", "b", "c"}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var entered atomic.Int64
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := names[(i+w)%len(names)]
				e, err := c.Enter(name, "")
				if err != nil {
					t.Error(err)
					return
				}
				entered.Add(1)
				c.Lock()
				inMap, ok := c.FindLocked(name)
				c.Unlock()
				if !ok || inMap != e.Item() {
					t.Errorf("a user of %s holds an entry that is not the one in the map", name)
				}
				e.Leave()
			}
		})
	}
	evictions := 0
	for evictions < 100 || entered.Load() < 1000 {
		c.Sweep(0, func(*int) bool { return false }, func(string, *int) { evictions++ })
	}
	close(stop)
	wg.Wait()
}

func TestGetOrCreateAndPutLockedKeepTheOlderFormWorking(t *testing.T) {
	c := catalog.New[int, string]("config", "default", 1)
	created := 0
	create := func(name string, cfg int) (string, error) {
		created++
		b := name + "!"
		c.PutLocked(name, b)
		return b, nil
	}
	a, err := c.GetOrCreate("a", "default", create)
	again, _ := c.GetOrCreate("a", "default", create)
	if err != nil || a != "a!" || again != a || created != 1 {
		t.Fatalf("GetOrCreate = %q, %q, %v after %d creations", a, again, err, created)
	}
	c.Lock()
	c.PutLocked("a", "replaced")
	c.Unlock()
	if got, _ := c.Find("a"); got != "replaced" || c.Counted() != 1 {
		t.Fatalf("after PutLocked over a: %q, counted %d", got, c.Counted())
	}
	for range 5 {
		c.Sweep(0, func(string) bool { return false }, func(string, string) { t.Fatal("evicted a PutLocked item") })
	}
	if _, err := c.GetOrCreate("b", "none", create); err == nil {
		t.Fatal("unknown config accepted")
	}
}
