package bulkhead_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// registryWithNames returns a registry and n names in a random order, so
// that successive lookups miss the cache as a server's would.
func registryWithNames(b *testing.B, n int, opts ...bulkhead.RegistryOption) (*bulkhead.Registry, []string) {
	b.Helper()
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1 << 20}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("tenant-%07d", i)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { names[i], names[j] = names[j], names[i] })
	return r, names
}

// eachName runs op on names from every goroutine of b.RunParallel (-cpu
// 1,2 shows whether it scales across cores), each goroutine from its own
// place in names. It reports the process's CPU time per op of the timed
// loop alone (cpu-ns/op; setup excluded): with -cpu 2 it counts both cores'
// time, so cpu-ns/op divided by ns/op says how many cores were busy.
func eachName(b *testing.B, names []string, op func(name string)) {
	var seed atomic.Uint64
	b.ResetTimer()
	cpu := processCPU()
	defer func() { b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op") }()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seed.Add(7919)) % len(names)
		for pb.Next() {
			op(names[i])
			if i++; i == len(names) {
				i = 0
			}
		}
	})
}

// BenchmarkRegistryPaths is the cost of the registry's ways to a bulkhead
// and a permit:
//   - get/names=N: Get of an existing (pinned) name among N;
//   - get+{async,wait,try}+finish: Get, then the Semaphore's
//     AcquirePermissionAsync, AcquirePermission or TryAcquirePermission, and
//     FinishCall: the ways to a permit before keyed admission;
//   - keyed/{async,wait,try}+finish: the keyed trio and Lease.FinishCall,
//     on a registry with idle eviction and a cap on, as a server keyed by
//     tenant runs it (try+config+finish names the configuration).
//
// Compare get+X+finish with keyed/X+finish, and get/names=N with the
// binary of an earlier commit (bench/scripts/metricratio.py).
func BenchmarkRegistryPaths(b *testing.B) {
	for _, n := range []int{1000, 1_000_000} {
		b.Run(fmt.Sprint("get/names=", n), func(b *testing.B) {
			r, names := registryWithNames(b, n)
			for _, name := range names {
				if _, err := r.Get(name); err != nil {
					b.Fatal(err)
				}
			}
			eachName(b, names, func(name string) {
				if _, err := r.Get(name); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
	gets := func(b *testing.B) (*bulkhead.Registry, []string) {
		r, names := registryWithNames(b, 1000)
		for _, name := range names {
			if _, err := r.Get(name); err != nil {
				b.Fatal(err)
			}
		}
		return r, names
	}
	b.Run("get+async+finish", func(b *testing.B) {
		r, names := gets(b)
		eachName(b, names, func(name string) {
			s, err := r.Get(name)
			if err != nil {
				b.Fatal(err)
			}
			if !s.AcquirePermissionAsync().Granted() {
				b.Fatal("not granted")
			}
			s.FinishCall()
		})
	})
	b.Run("get+wait+finish", func(b *testing.B) {
		r, names := gets(b)
		ctx := context.Background()
		eachName(b, names, func(name string) {
			s, err := r.Get(name)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.AcquirePermission(ctx); err != nil {
				b.Fatal(err)
			}
			s.FinishCall()
		})
	})
	b.Run("get+try+finish", func(b *testing.B) {
		r, names := gets(b)
		eachName(b, names, func(name string) {
			s, err := r.Get(name)
			if err != nil {
				b.Fatal(err)
			}
			if !s.TryAcquirePermission() {
				b.Fatal("not granted")
			}
			s.FinishCall()
		})
	})
	keyedNames := func(b *testing.B) (*bulkhead.Registry, []string) { return warmKeyedRegistry(b) }
	benchKeyedCalls(b, "keyed/", keyedNames)
	b.Run("keyed/try+config+finish", func(b *testing.B) {
		r, names := keyedNames(b)
		eachName(b, names, func(name string) {
			l, err := r.TryAcquirePermission(name, bulkhead.CallOptions{ConfigName: bulkhead.DefaultConfigName})
			if err != nil {
				b.Fatal(err)
			}
			l.FinishCall()
		})
	})
}

// warmKeyedRegistry returns a registry with idle eviction, a cap and opts,
// and its 1,000 names, each with a bulkhead (made by one keyed call).
func warmKeyedRegistry(b *testing.B, opts ...bulkhead.RegistryOption) (*bulkhead.Registry, []string) {
	b.Helper()
	opts = append([]bulkhead.RegistryOption{bulkhead.WithIdleTimeout(time.Hour),
		bulkhead.WithMaxBulkheads(100_000, bulkhead.Config{MaxConcurrentCalls: 1 << 20})}, opts...)
	r, names := registryWithNames(b, 1000, opts...)
	for _, name := range names {
		l, err := r.TryAcquirePermission(name, bulkhead.CallOptions{})
		if err != nil {
			b.Fatal(err)
		}
		l.FinishCall()
	}
	return r, names
}

// benchKeyedCalls runs prefix+"async+finish", prefix+"wait+finish" and
// prefix+"try+finish": a keyed call of each form, granted at once, and its
// Lease.FinishCall, over the names of the registry newRegistry makes.
func benchKeyedCalls(b *testing.B, prefix string, newRegistry func(*testing.B) (*bulkhead.Registry, []string)) {
	b.Run(prefix+"async+finish", func(b *testing.B) {
		r, names := newRegistry(b)
		eachName(b, names, func(name string) {
			a, l := r.AcquirePermissionAsync(name, bulkhead.CallOptions{})
			if !a.Granted() {
				b.Fatal("not granted")
			}
			l.FinishCall()
		})
	})
	b.Run(prefix+"wait+finish", func(b *testing.B) {
		r, names := newRegistry(b)
		ctx := context.Background()
		eachName(b, names, func(name string) {
			l, err := r.AcquirePermission(ctx, name, bulkhead.CallOptions{})
			if err != nil {
				b.Fatal(err)
			}
			l.FinishCall()
		})
	})
	b.Run(prefix+"try+finish", func(b *testing.B) {
		r, names := newRegistry(b)
		eachName(b, names, func(name string) {
			l, err := r.TryAcquirePermission(name, bulkhead.CallOptions{})
			if err != nil {
				b.Fatal(err)
			}
			l.FinishCall()
		})
	})
}
