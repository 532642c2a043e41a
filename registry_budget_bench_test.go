package bulkhead_test

import (
	"context"
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
		r, names := registryWithNames(b, 1000, bulkhead.WithIdleTimeout(time.Hour),
			bulkhead.WithMaxBulkheads(100_000, bulkhead.Config{MaxConcurrentCalls: 1 << 20}),
			bulkhead.WithBudget(hub, nil))
		for _, name := range names {
			l, err := r.TryAcquirePermission(name, bulkhead.CallOptions{})
			if err != nil {
				b.Fatal(err)
			}
			l.FinishCall()
		}
		return r, names
	}
	b.Run("async+finish", func(b *testing.B) {
		r, names := budgeted(b)
		eachName(b, names, func(name string) {
			a, l := r.AcquirePermissionAsync(name, bulkhead.CallOptions{})
			if !a.Granted() {
				b.Fatal("not granted")
			}
			l.FinishCall()
		})
	})
	b.Run("wait+finish", func(b *testing.B) {
		r, names := budgeted(b)
		ctx := context.Background()
		eachName(b, names, func(name string) {
			l, err := r.AcquirePermission(ctx, name, bulkhead.CallOptions{})
			if err != nil {
				b.Fatal(err)
			}
			l.FinishCall()
		})
	})
	b.Run("try+finish", func(b *testing.B) {
		r, names := budgeted(b)
		eachName(b, names, func(name string) {
			l, err := r.TryAcquirePermission(name, bulkhead.CallOptions{})
			if err != nil {
				b.Fatal(err)
			}
			l.FinishCall()
		})
	})
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
