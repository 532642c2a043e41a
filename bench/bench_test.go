package bench_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bench/peer"
)

// The speed benchmarks (TryAcquire, Async, Contended) run every peer in one
// go test run so that their ratios hold; the cost benchmarks (Cost*) measure
// memory once per b.N and are meant for -benchtime 1x.

func closeIfPool(p peer.Peer) {
	if c, ok := p.(interface{ Close() }); ok {
		c.Close()
	}
}

// BenchmarkTryAcquire: uncontended TryAcquire + Release. A pool's worker
// goes back to idle asynchronously after Release, so for the pools a failed
// TryAcquire is retried: the time until a worker is free again is part of
// their cost.
func BenchmarkTryAcquire(b *testing.B) {
	for _, f := range peer.All() {
		b.Run(f.Name, func(b *testing.B) {
			p := f.New(4)
			defer closeIfPool(p)
			b.ReportAllocs()
			for b.Loop() {
				for !p.TryAcquire() {
					if !f.AsyncRelease {
						b.Fatal("TryAcquire failed on an idle bulkhead")
					}
					runtime.Gosched()
				}
				p.Release()
			}
		})
	}
}

// BenchmarkAsync: the asynchronous fast path, uncontended: request a
// permit without blocking, continue in the callback, release. The
// WaitGroup lets a peer whose callback runs elsewhere (the pool) finish
// before the next request.
func BenchmarkAsync(b *testing.B) {
	for _, f := range peer.All() {
		b.Run(f.Name, func(b *testing.B) {
			p := f.New(4)
			defer closeIfPool(p)
			var wg sync.WaitGroup
			cb := func(err error) {
				if err == nil {
					p.Release()
				}
				wg.Done()
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				wg.Add(1)
				p.AcquireAsync(ctx, cb)
				wg.Wait()
			}
		})
	}
}

// BenchmarkContended: 16 goroutines share 4 permits; each holds its permit
// across a runtime.Gosched so that the others really find the bulkhead
// full and wait. ns/op is per acquire+release, over all goroutines.
func BenchmarkContended(b *testing.B) {
	const goroutines, permits = 16, 4
	for _, f := range peer.All() {
		b.Run(f.Name, func(b *testing.B) {
			p := f.New(permits)
			defer closeIfPool(p)
			contend(b, p, context.Background(), goroutines)
		})
	}
}

type memSnap struct {
	heap, stack uint64
	goroutines  int
}

func snapshot() memSnap {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memSnap{heap: m.HeapAlloc, stack: m.StackInuse, goroutines: runtime.NumGoroutine()}
}

func (s memSnap) sub(o memSnap) (heap, stack float64, goroutines int) {
	return float64(int64(s.heap) - int64(o.heap)), float64(int64(s.stack) - int64(o.stack)), s.goroutines - o.goroutines
}

// BenchmarkCostWaiter: 100k callers wait on a full bulkhead. Reported per
// waiter: live heap bytes (heapB/waiter), goroutine stack bytes
// (stackB/waiter) and goroutines (goroutines/waiter).
func BenchmarkCostWaiter(b *testing.B) {
	const waiters = 100_000
	for _, f := range peer.All() {
		b.Run(f.Name, func(b *testing.B) {
			var heap, stack, gs float64
			for range b.N {
				h, s, g := measureWaiters(b, f, waiters)
				heap, stack, gs = heap+h, stack+s, gs+g
			}
			n := float64(b.N * waiters)
			b.ReportMetric(heap/n, "heapB/waiter")
			b.ReportMetric(stack/n, "stackB/waiter")
			b.ReportMetric(gs/n, "goroutines/waiter")
		})
	}
}

func measureWaiters(b *testing.B, f peer.Factory, waiters int) (heap, stack, goroutines float64) {
	b.StopTimer()
	p := f.New(1)
	defer closeIfPool(p)
	if !p.TryAcquire() {
		b.Fatal("TryAcquire failed on an idle bulkhead")
	}
	var started, granted sync.WaitGroup
	granted.Add(waiters)
	// Each waiter, once granted, passes its permit on to the next.
	cb := func(err error) {
		if err != nil {
			panic(err)
		}
		p.Release()
		granted.Done()
	}
	var entered atomic.Int64
	ctx := context.Background()
	warmGoroutines(waiters)
	before := snapshot()
	b.StartTimer()
	started.Add(1)
	for range waiters {
		p.AcquireAsync(ctx, func(err error) { cb(err) })
		entered.Add(1)
	}
	started.Done()
	b.StopTimer()
	// Let goroutine-based waiters reach their blocking point.
	for range 100 {
		runtime.Gosched()
	}
	after := snapshot()
	h, s, g := after.sub(before)
	p.Release()
	granted.Wait()
	return h, s, float64(g)
}

// warm takes every permit of p at once, then gives them back.
func warm(b *testing.B, p peer.Peer, permits int) {
	for range permits {
		if err := p.Acquire(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	for range permits {
		p.Release()
	}
}

// warmGoroutines starts and ends n goroutines so that the runtime's free
// list holds n goroutine descriptors: every peer then reuses them, and the
// heap figures of goroutine-based waiters do not depend on which peer ran
// first. (Each goroutine also costs a runtime descriptor of a few hundred
// bytes that heapB/waiter therefore does not count.)
func warmGoroutines(n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {})
	}
	wg.Wait()
}

// BenchmarkCostPartners: 500 partners with 20 permits each, as the
// bulkheads of an EDI hub, after each has run 20 calls at once (so a pool
// that starts workers lazily has started them all): total live heap
// (heapKB), stack (stackKB) and goroutines. For rxbulkhead the partners live
// in a bulkhead.Registry.
func BenchmarkCostPartners(b *testing.B) {
	const partners, permits = 500, 20
	for _, f := range peer.All() {
		b.Run(f.Name, func(b *testing.B) {
			var heap, stack, gs float64
			for range b.N {
				b.StopTimer()
				before := snapshot()
				b.StartTimer()
				var keep any
				if f.Name == "rxbulkhead" {
					r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: permits, MaxWaitDuration: 1e9, MaxQueuedCalls: 100})
					if err != nil {
						panic(err)
					}
					for i := range partners {
						if _, err := r.Get(fmt.Sprintf("partner-%03d", i)); err != nil {
							b.Fatal(err)
						}
					}
					keep = r
				} else {
					m := make(map[string]peer.Peer, partners)
					for i := range partners {
						p := f.New(permits)
						warm(b, p, permits)
						m[fmt.Sprintf("partner-%03d", i)] = p
					}
					keep = m
				}
				b.StopTimer()
				after := snapshot()
				h, s, g := after.sub(before)
				heap, stack, gs = heap+h, stack+s, gs+float64(g)
				if m, ok := keep.(map[string]peer.Peer); ok {
					for _, p := range m {
						closeIfPool(p)
					}
				}
				runtime.KeepAlive(keep)
			}
			n := float64(b.N)
			b.ReportMetric(heap/n/1024, "heapKB")
			b.ReportMetric(stack/n/1024, "stackKB")
			b.ReportMetric(gs/n, "goroutines")
		})
	}
}

// contend runs b.N blocking acquire + release pairs of p over the given
// number of goroutines; each holds its permit across a runtime.Gosched so
// that the others really find the bulkhead full and wait.
func contend(b *testing.B, p peer.Peer, ctx context.Context, goroutines int) {
	var ops atomic.Int64
	ops.Store(int64(b.N))
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for range goroutines {
		wg.Go(func() {
			for ops.Add(-1) >= 0 {
				if err := p.Acquire(ctx); err != nil {
					panic(err)
				}
				runtime.Gosched()
				p.Release()
			}
		})
	}
	wg.Wait()
}
