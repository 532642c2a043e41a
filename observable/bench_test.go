package observable_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/observable"
)

func openBulkhead(b *testing.B) *bulkhead.Semaphore {
	s, err := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// Per-subscription overhead: observe and drain Just(1), bare and through an
// open bulkhead.
func BenchmarkObserveJust(b *testing.B) {
	run := func(b *testing.B, obs rxgo.Observable) {
		b.ReportAllocs()
		for b.Loop() {
			for range obs.Observe() {
			}
		}
	}
	id := func(_ context.Context, v any) (any, error) { return v, nil }
	b.Run("bare", func(b *testing.B) { run(b, rxgo.Just(1)()) })
	// One rxgo operator, for scale: a goroutine and a channel hop, as ours.
	b.Run("bare+Map", func(b *testing.B) { run(b, rxgo.Just(1)().Map(id)) })
	b.Run("bulkhead", func(b *testing.B) { run(b, observable.Bulkhead(openBulkhead(b), rxgo.Just(1)())) })
	// With a context: rxgo must evaluate the options (see rxpermit).
	b.Run("bulkhead+WithContext", func(b *testing.B) {
		obs := observable.Bulkhead(openBulkhead(b), rxgo.Just(1)())
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			for range obs.Observe(rxgo.WithContext(ctx)) {
			}
		}
	})
}

// Per-item overhead: Range(0, 1e5) drained, bare and through a bulkhead.
// ns/item is reported. Run with a small -benchtime (e.g. 5x): one op is
// 1e5 items.
func BenchmarkRange(b *testing.B) {
	const n = 100_000
	run := func(b *testing.B, obs rxgo.Observable) {
		b.ReportAllocs()
		for b.Loop() {
			count := 0
			for range obs.Observe() {
				count++
			}
			if count != n {
				b.Fatalf("got %d items", count)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/item")
	}
	id := func(_ context.Context, v any) (any, error) { return v, nil }
	b.Run("bare", func(b *testing.B) { run(b, rxgo.Range(0, n)) })
	// One rxgo operator, for scale: its channel hop costs what ours does.
	b.Run("bare+Map", func(b *testing.B) { run(b, rxgo.Range(0, n).Map(id)) })
	b.Run("bulkhead", func(b *testing.B) { run(b, observable.Bulkhead(openBulkhead(b), rxgo.Range(0, n))) })
}

// What a subscription waiting for a permit costs: goroutines and memory
// (heap + stacks) per pending observation, with 10k observations queued on
// a full bulkhead. Run with a small -benchtime (e.g. 5x).
func BenchmarkPendingSubscription(b *testing.B) {
	const pending = 10_000
	s, err := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	if err != nil {
		b.Fatal(err)
	}
	s.TryAcquirePermission()
	defer s.ReleasePermission()
	obs := observable.Bulkhead(s, rxgo.Just(1)())
	for b.Loop() {
		b.StopTimer()
		ctx, cancel := context.WithCancel(context.Background())
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		b.StartTimer()
		chs := make([]<-chan rxgo.Item, pending)
		for i := range chs {
			chs[i] = obs.Observe(rxgo.WithContext(ctx))
		}
		for s.Metrics().QueuedCalls < pending {
			runtime.Gosched()
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(runtime.NumGoroutine()-g0)/pending, "goroutines/pending")
		mem := (after.HeapInuse + after.StackInuse) - (before.HeapInuse + before.StackInuse)
		b.ReportMetric(float64(mem)/pending, "B/pending")
		cancel()
		for _, ch := range chs {
			for range ch {
			}
		}
		b.StartTimer()
	}
}
