package bulkhead_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// limiter is the tiny interface the benchmarks compare implementations
// through; bench/ (a nested module) adds golang.org/x/sync/semaphore and
// other peers behind the same shape.
type limiter interface {
	TryAcquire() bool
	Acquire(ctx context.Context) error
	Release()
}

type semaphoreLimiter struct{ s *bulkhead.Semaphore }

func (l semaphoreLimiter) TryAcquire() bool                  { return l.s.TryAcquirePermission() }
func (l semaphoreLimiter) Acquire(ctx context.Context) error { return l.s.AcquirePermission(ctx) }
func (l semaphoreLimiter) Release()                          { l.s.FinishCall() }

// chanLimiter is the baseline every Go programmer writes first.
type chanLimiter chan struct{}

func (c chanLimiter) TryAcquire() bool {
	select {
	case c <- struct{}{}:
		return true
	default:
		return false
	}
}

func (c chanLimiter) Acquire(ctx context.Context) error {
	select {
	case c <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c chanLimiter) Release() { <-c }

func limiters(b *testing.B, permits int) map[string]limiter {
	s, err := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: permits, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	if err != nil {
		b.Fatal(err)
	}
	// The same bulkhead on a clock that never moves: the difference to
	// "bulkhead" is the cost of reading the time for each queued call's
	// deadline (time.Now is slow on some virtual machines).
	frozen, err := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: permits, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded},
		bulkhead.WithClock(testkit.NewVirtualClock(time.Unix(0, 0))))
	if err != nil {
		b.Fatal(err)
	}
	return map[string]limiter{"bulkhead": semaphoreLimiter{s}, "bulkhead-frozen-clock": semaphoreLimiter{frozen}, "chan": make(chanLimiter, permits)}
}

func BenchmarkTryAcquireFinishCall(b *testing.B) {
	for _, name := range []string{"bulkhead", "chan"} {
		b.Run(name, func(b *testing.B) {
			l := limiters(b, 1)[name]
			b.ReportAllocs()
			for b.Loop() {
				if !l.TryAcquire() {
					b.Fatal("not acquired")
				}
				l.Release()
			}
		})
	}
}

func BenchmarkAcquirePermissionAsyncFastPath(b *testing.B) {
	s, _ := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	b.ReportAllocs()
	for b.Loop() {
		if s.AcquirePermissionAsync().Err() != nil {
			b.Fatal("not granted")
		}
		s.FinishCall()
	}
}

// 16 goroutines compete for 4 permits with blocking acquisition.
func BenchmarkContendedAcquire(b *testing.B) {
	for _, name := range []string{"bulkhead", "bulkhead-frozen-clock", "chan"} {
		b.Run(name, func(b *testing.B) {
			l := limiters(b, 4)[name]
			ctx := context.Background()
			b.ReportAllocs()
			b.SetParallelism(16 / max(runtime.GOMAXPROCS(0), 1))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := l.Acquire(ctx); err != nil {
						b.Error(err)
						return
					}
					l.Release()
				}
			})
		})
	}
}

// Heap bytes and goroutines per queued acquisition, with 100k queued.
func BenchmarkQueuedAcquisitionMemory(b *testing.B) {
	const queued = 100_000
	for b.Loop() {
		s, _ := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
		s.TryAcquirePermission()
		gBefore := runtime.NumGoroutine()
		before := heapInUse()
		waiters := make([]*bulkhead.Acquisition, queued)
		sliceBytes := float64(queued * 8)
		for i := range waiters {
			waiters[i] = s.AcquirePermissionAsync()
		}
		after := heapInUse()
		b.ReportMetric((float64(after-before)-sliceBytes)/queued, "B/waiter")
		b.ReportMetric(float64(runtime.NumGoroutine()-gBefore)/queued, "goroutines/waiter")
		for _, w := range waiters {
			w.Cancel()
		}
		s.ReleasePermission()
	}
}

// Heap of a registry with 500 partner bulkheads of 20 permits each.
func BenchmarkRegistry500Partners(b *testing.B) {
	for b.Loop() {
		before := heapInUse()
		r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: 100})
		if err != nil {
			panic(err)
		}
		for i := range 500 {
			if _, err := r.Get(fmt.Sprintf("partner-%03d", i)); err != nil {
				b.Fatal(err)
			}
		}
		after := heapInUse()
		b.ReportMetric(float64(after-before)/1024, "KiB/registry")
		runtime.KeepAlive(r)
	}
}

// BenchmarkEventsNoListener shows the cost of event publication when nobody
// listens (compare with BenchmarkTryAcquireFinishCall/bulkhead).
func BenchmarkEventsOneListener(b *testing.B) {
	s, _ := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: 1})
	var mu sync.Mutex
	n := 0
	s.OnEvent(func(bulkhead.Event) { mu.Lock(); n++; mu.Unlock() })
	b.ReportAllocs()
	for b.Loop() {
		s.TryAcquirePermission()
		s.FinishCall()
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A weighted call (Semaphore.Call(3)) on the fast path: one CAS of three
// takes, one of three gives.
func BenchmarkWeightedTryAcquireFinishCall(b *testing.B) {
	s, _ := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: 3, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	c := s.Call(3)
	b.ReportAllocs()
	for b.Loop() {
		if !c.TryAcquirePermission() {
			b.Fatal("not acquired")
		}
		c.FinishCall()
	}
}

func BenchmarkWeightedAsyncFastPath(b *testing.B) {
	s, _ := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: 3, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	c := s.Call(3)
	b.ReportAllocs()
	for b.Loop() {
		if c.AcquirePermissionAsync().Err() != nil {
			b.Fatal("not granted")
		}
		c.FinishCall()
	}
}

// Heap bytes per queued weighted acquisition (weight 2), with 100k queued:
// the Acquisition and its weight's owner record.
func BenchmarkQueuedWeightedAcquisitionMemory(b *testing.B) {
	const queued = 100_000
	for b.Loop() {
		s, _ := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
		s.TryAcquirePermission()
		c := s.Call(2)
		before := heapInUse()
		waiters := make([]*bulkhead.Acquisition, queued)
		sliceBytes := float64(queued * 8)
		for i := range waiters {
			waiters[i] = c.AcquirePermissionAsync()
		}
		after := heapInUse()
		b.ReportMetric((float64(after-before)-sliceBytes)/queued, "B/waiter")
		for _, w := range waiters {
			w.Cancel()
		}
		s.ReleasePermission()
	}
}
