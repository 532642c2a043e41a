package bulkhead_test

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/rxbulkhead/bulkhead"
)

// registryWithNames returns a registry holding n bulkheads and their names
// in a random order, so that successive lookups miss the cache as a
// server's would.
func registryWithNames(b *testing.B, n int) (*bulkhead.Registry, []string) {
	b.Helper()
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("tenant-%07d", i)
		if _, err := r.Get(names[i]); err != nil {
			b.Fatal(err)
		}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { names[i], names[j] = names[j], names[i] })
	return r, names
}

var registrySizes = []int{1000, 1_000_000}

// BenchmarkRegistryGet is Get of an existing name from every goroutine
// (-cpu 1,2 shows whether it scales across cores).
func BenchmarkRegistryGet(b *testing.B) {
	for _, n := range registrySizes {
		b.Run(fmt.Sprint("names=", n), func(b *testing.B) {
			r, names := registryWithNames(b, n)
			var seed atomic.Uint64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(seed.Add(7919)) % n
				for pb.Next() {
					if _, err := r.Get(names[i]); err != nil {
						b.Fatal(err)
					}
					if i++; i == n {
						i = 0
					}
				}
			})
		})
	}
}

// BenchmarkRegistryGetAcquireFinish is the way to a permit through a
// registry before keyed admission: Get, AcquirePermissionAsync, FinishCall.
func BenchmarkRegistryGetAcquireFinish(b *testing.B) {
	r, names := registryWithNames(b, 1000)
	var seed atomic.Uint64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seed.Add(7919)) % len(names)
		for pb.Next() {
			s, err := r.Get(names[i])
			if err != nil {
				b.Fatal(err)
			}
			if !s.AcquirePermissionAsync().Granted() {
				b.Fatal("not granted")
			}
			s.FinishCall()
			if i++; i == len(names) {
				i = 0
			}
		}
	})
}
