package bulkhead_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// BenchmarkRegistryKeyedAcquireFinish is the keyed way to a permit, with
// eviction and a cap on: AcquirePermissionAsync(key), Lease.FinishCall.
// Compare with BenchmarkRegistryGetAcquireFinish.
func BenchmarkRegistryKeyedAcquireFinish(b *testing.B) {
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1 << 20},
		bulkhead.WithIdleTimeout(time.Hour), bulkhead.WithMaxBulkheads(100_000, bulkhead.Config{MaxConcurrentCalls: 1 << 20}))
	if err != nil {
		b.Fatal(err)
	}
	_, names := registryWithNames(b, 1000)
	for _, n := range names {
		a, l := r.AcquirePermissionAsync(n)
		if a.Err() != nil {
			b.Fatal(a.Err())
		}
		l.FinishCall()
	}
	var seed atomic.Uint64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seed.Add(7919)) % len(names)
		for pb.Next() {
			a, l := r.AcquirePermissionAsync(names[i])
			if !a.Granted() {
				b.Fatal("not granted")
			}
			l.FinishCall()
			if i++; i == len(names) {
				i = 0
			}
		}
	})
}
