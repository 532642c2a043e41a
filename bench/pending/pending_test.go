package pending_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/maybe"
	"github.com/rxbulkhead/bulkhead/observable"
	"github.com/rxbulkhead/bulkhead/single"
)

// kind is one pipeline: start makes one call that waits for a permit of b
// (b is full) and returns the func that withdraws it; ctx ends when the
// whole batch is withdrawn, for the pipelines that cancel by context.
// settle, if set, runs after the batch is withdrawn (drains channels).
type kind struct {
	name  string
	start func(ctx context.Context, b *bulkhead.Semaphore) (withdraw func())
}

var identity = func(_ context.Context, v any) (any, error) { return v, nil }

// drained returns a withdraw func for an rxgo channel whose context is
// cancelled by the batch: it drains ch until it closes.
func drained(ch <-chan rxgo.Item) func() {
	return func() {
		for range ch {
		}
	}
}

var coreKinds = []kind{
	{"AcquirePermissionAsync", func(_ context.Context, b *bulkhead.Semaphore) func() {
		a := b.AcquirePermissionAsync()
		return func() { a.Cancel() }
	}},
	{"flowable", func(_ context.Context, b *bulkhead.Semaphore) func() {
		var sub flowable.Subscription
		flowable.Bulkhead(b, flowable.Just(1)).Subscribe(flowable.Funcs[int]{Start: func(s flowable.Subscription) {
			sub = s
			s.Request(1)
		}})
		return sub.Cancel
	}},
	{"observable", func(ctx context.Context, b *bulkhead.Semaphore) func() {
		return drained(observable.Bulkhead(b, rxgo.Just(1)()).Observe(rxgo.WithContext(ctx)))
	}},
	{"observable+Map", func(ctx context.Context, b *bulkhead.Semaphore) func() {
		return drained(observable.Bulkhead(b, rxgo.Just(1)()).Map(identity).Observe(rxgo.WithContext(ctx)))
	}},
	{"single", func(ctx context.Context, b *bulkhead.Semaphore) func() {
		return drained(single.Bulkhead(b, rxgo.JustItem(1)).Observe(rxgo.WithContext(ctx)))
	}},
	{"maybe", func(ctx context.Context, b *bulkhead.Semaphore) func() {
		return drained(maybe.Bulkhead(b, rxgo.Just(1)().First()).Observe(rxgo.WithContext(ctx)))
	}},
	{"completable", func(_ context.Context, b *bulkhead.Semaphore) func() {
		var d completable.Disposable
		completable.Bulkhead(b, completable.Complete()).Subscribe(observer{onSubscribe: func(x completable.Disposable) { d = x }})
		return d.Dispose
	}},
}

type observer struct{ onSubscribe func(completable.Disposable) }

func (o observer) OnSubscribe(d completable.Disposable) { o.onSubscribe(d) }
func (observer) OnComplete()                            {}
func (observer) OnError(error)                          {}

// full returns a 1-permit bulkhead whose permit is held until the test
// ends, with a long wait so that calls queue.
func full(tb testing.TB) *bulkhead.Semaphore {
	tb.Helper()
	b, err := bulkhead.New("pending", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	if !b.TryAcquirePermission() {
		tb.Fatal("no free permit")
	}
	tb.Cleanup(b.ReleasePermission)
	return b
}

// batch starts n pending calls of k, waits until all are queued and
// returns the func that withdraws them all and checks that none is left.
func batch(tb testing.TB, k kind, b *bulkhead.Semaphore, withdraws []func()) func() {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	for i := range withdraws {
		withdraws[i] = k.start(ctx, b)
	}
	for b.Metrics().QueuedCalls < len(withdraws) {
		runtime.Gosched() // some pipelines ask for the permit on a goroutine of their own
	}
	return func() {
		tb.Helper()
		cancel()
		for _, w := range withdraws {
			w()
		}
		// A channel can close before its upstream has withdrawn (rxgo's
		// Map does not wait for its source): give withdrawals time to land.
		for deadline := time.Now().Add(10 * time.Second); b.Metrics().QueuedCalls != 0 && time.Now().Before(deadline); {
			runtime.Gosched()
		}
		if m := b.Metrics(); m.QueuedCalls != 0 || m.InFlightCalls != 1 {
			tb.Fatalf("%s: %d call(s) queued and %d permit(s) held after withdrawing all", k.name, m.QueuedCalls, m.InFlightCalls)
		}
	}
}

// cost measures k: goroutines and bytes (live heap + stacks, after a GC)
// per pending call, with pending calls queued at once.
func cost(b *testing.B, k kind, pending int) {
	s := full(b)
	withdraws := make([]func(), pending)
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		b.StartTimer()
		end := batch(b, k, s, withdraws)
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(runtime.NumGoroutine()-g0)/float64(pending), "goroutines/pending")
		mem := int64(after.HeapAlloc+after.StackInuse) - int64(before.HeapAlloc+before.StackInuse)
		b.ReportMetric(float64(mem)/float64(pending), "B/pending")
		end()
		clear(withdraws) // the next "before" must not count this batch
		b.StartTimer()
	}
}

// BenchmarkPending reports, per pipeline, what one call waiting for a
// permit costs, with 10,000 of them queued. One op queues and withdraws the
// whole batch; run with a small -benchtime (3x).
func BenchmarkPending(b *testing.B) {
	for _, k := range kinds() {
		b.Run(k.name, func(b *testing.B) { cost(b, k, 10_000) })
	}
}

// TestEveryKindQueuesAndWithdrawsItsCalls checks the harness: each kind's
// calls are queued by the bulkhead and withdrawn by its withdraw func.
func TestEveryKindQueuesAndWithdrawsItsCalls(t *testing.T) {
	for _, k := range kinds() {
		t.Run(k.name, func(t *testing.T) {
			b := full(t)
			end := batch(t, k, b, make([]func(), 50))
			if got := b.Metrics().QueuedCalls; got != 50 {
				t.Fatalf("%d calls queued, want 50", got)
			}
			end()
		})
	}
}
