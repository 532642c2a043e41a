package catalog_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/rxbulkhead/bulkhead/internal/catalog"
)

func TestGetOrCreateCreatesOncePerNameFromTheNamedConfig(t *testing.T) {
	c := catalog.New[int, string]("config", "default", 1)
	c.SetConfig("big", 50)
	created := 0
	create := func(name string, cfg int) (string, error) {
		created++
		b := name + "/" + string(rune('0'+cfg%10))
		c.PutLocked(name, b)
		return b, nil
	}
	a, err := c.GetOrCreate("a", "default", create)
	if err != nil || a != "a/1" {
		t.Fatalf("GetOrCreate = %q, %v", a, err)
	}
	again, _ := c.GetOrCreate("a", "big", create)
	if again != a || created != 1 {
		t.Fatalf("second GetOrCreate = %q after %d creations, want the existing item", again, created)
	}
	if _, err := c.GetOrCreate("b", "huge", create); err == nil || err.Error() != `bulkhead "b": unknown config "huge" (known: big, default)` {
		t.Fatalf("unknown config: %v", err)
	}
	if _, ok := c.Find("b"); ok {
		t.Fatal("a failed creation registered an item")
	}
	c.GetOrCreate("0", "big", create)
	if all := c.All(); !slices.Equal(all, []string{"0/0", "a/1"}) {
		t.Fatalf("All = %v, want sorted by name", all)
	}
	c.Lock()
	b, ok := c.RemoveLocked("a")
	_, still := c.FindLocked("a")
	c.Unlock()
	if !ok || b != "a/1" || still {
		t.Fatalf("RemoveLocked = %q, %v; still there %v", b, ok, still)
	}
}

func TestConfigsVisitsEveryConfigInNameOrderAndStopsAtAnError(t *testing.T) {
	c := catalog.New[int, string]("config", "default", 1)
	c.SetConfig("a", 2)
	c.SetConfig("z", 3)
	var names []string
	stop := errors.New("stop")
	err := c.Configs(func(name string, cfg int) error {
		names = append(names, name)
		if cfg == 1 {
			return stop
		}
		return nil
	})
	if err != stop || !slices.Equal(names, []string{"a", "default"}) {
		t.Fatalf("Configs visited %v and returned %v", names, err)
	}
}
