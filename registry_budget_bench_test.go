package bulkhead_test

import (
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// BenchmarkRegistryBudgetPaths is the cost of a keyed call in a registry
// joined to a budget (WithBudget), granted at once by both levels, and its
// Lease.FinishCall: {async,wait,try}+finish with the partner's class and
// weight 1, and try+class+weight+finish naming a class and a weight of 3.
// Compare with BenchmarkRegistryPaths/keyed/X+finish, the same registry
// without a budget.
func BenchmarkRegistryBudgetPaths(b *testing.B) {
	budgeted := func(b *testing.B) (*bulkhead.Registry, []string) {
		hub, err := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{Size: 1 << 20, MaxQueuedCalls: bulkhead.Unbounded,
			Classes: []bulkhead.ClassConfig{
				{Name: "interactive", MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
				{Name: "batch", MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
			}})
		if err != nil {
			b.Fatal(err)
		}
		return warmKeyedRegistry(b, bulkhead.WithBudget(hub, nil))
	}
	benchKeyedCalls(b, "", budgeted)
	b.Run("try+class+weight+finish", func(b *testing.B) {
		r, names := budgeted(b)
		eachName(b, names, func(name string) {
			l, err := r.TryAcquirePermission(name, bulkhead.CallOptions{Class: "batch", Weight: 3})
			if err != nil {
				b.Fatal(err)
			}
			l.FinishCall()
		})
	})
}
