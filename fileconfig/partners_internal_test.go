package fileconfig

import (
	"runtime"
	"testing"
	"weak"

	"github.com/rxbulkhead/bulkhead"
)

// hasTable reports whether the table of the registry wp points to is still
// in tables (a weak.Pointer stays comparable after its value is collected).
func hasTable(wp weak.Pointer[bulkhead.Registry]) bool {
	_, ok := tables.Load(wp)
	return ok
}

// The table Apply reads for a registry of Budgets.NewRegistry does not keep
// the registry alive: once the registry is garbage, its entry goes. Only
// this registry's entry is looked at: the tables of other tests' registries
// may go at any collection too (with -count or a -cpu list, earlier runs
// leave garbage registries behind).
func TestARegistrysPartnerTableGoesWithTheRegistry(t *testing.T) {
	f := File{
		Budget:    "hub",
		Budgets:   map[string]BudgetSpec{"hub": {Size: 4, Classes: []ClassSpec{{Name: "a"}}}},
		Instances: map[string]Spec{"w": {}},
	}
	bs, err := NewBudgets(f)
	if err != nil {
		t.Fatal(err)
	}
	var wp weak.Pointer[bulkhead.Registry]
	func() {
		r, err := bs.NewRegistry(f)
		if err != nil {
			t.Fatal(err)
		}
		wp = weak.Make(r)
		if tableOf(r) == nil || !hasTable(wp) {
			t.Fatal("the registry has no table")
		}
		l, err := r.TryAcquirePermission("w", bulkhead.CallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l.FinishCall()
	}()
	// Cleanups run on a goroutine of the runtime after a collection; a
	// bounded number of collections is enough (each one is synchronous).
	for i := 0; i < 100 && hasTable(wp); i++ {
		runtime.GC()
		runtime.Gosched()
	}
	if hasTable(wp) {
		t.Fatal("the registry's table is still there after it became garbage")
	}
	runtime.KeepAlive(bs)
}
