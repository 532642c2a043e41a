package fileconfig

import (
	"runtime"
	"testing"

	"github.com/rxbulkhead/bulkhead"
)

func tableCount() int {
	n := 0
	tables.Range(func(any, any) bool { n++; return true })
	return n
}

// The table Apply reads for a registry of Budgets.NewRegistry does not keep
// the registry alive: once the registry is garbage, its entry goes.
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
	before := tableCount()
	func() {
		r, err := bs.NewRegistry(f)
		if err != nil {
			t.Fatal(err)
		}
		if tableOf(r) == nil || tableCount() != before+1 {
			t.Fatalf("the registry has no table (%d tables, %d before)", tableCount(), before)
		}
		l, err := r.TryAcquirePermission("w", bulkhead.CallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l.FinishCall()
	}()
	// Cleanups run on a goroutine of the runtime after a collection; a
	// bounded number of collections is enough (each one is synchronous).
	for i := 0; i < 100 && tableCount() != before; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	if n := tableCount(); n != before {
		t.Fatalf("%d tables after the registry became garbage, want %d", n, before)
	}
	runtime.KeepAlive(bs)
}
