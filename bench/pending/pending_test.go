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

// kind is one pipeline. build makes the pipeline around b once (it is not
// part of the cost of a call); the func it returns makes one call that
// waits for a permit of b (b is full) and returns the func that withdraws
// it. ctx ends when the whole batch is withdrawn, for the pipelines that
// cancel by context.
type kind struct {
	name  string
	build func(b *bulkhead.Semaphore) (call func(ctx context.Context) (withdraw func()))
}

var identity = func(_ context.Context, v any) (any, error) { return v, nil }

// observed makes calls that observe obs with the batch's context; their
// withdraw func drains the channel until it closes (the context's end
// withdraws them).
func observed(obs rxgo.Iterable) func(context.Context) func() {
	return func(ctx context.Context) func() {
		ch := obs.Observe(rxgo.WithContext(ctx))
		return func() {
			for range ch {
			}
		}
	}
}

var coreKinds = []kind{
	{"AcquirePermissionAsync", func(b *bulkhead.Semaphore) func(context.Context) func() {
		return func(context.Context) func() {
			a := b.AcquirePermissionAsync()
			return func() { a.Cancel() }
		}
	}},
	{"flowable", func(b *bulkhead.Semaphore) func(context.Context) func() {
		p := flowable.Bulkhead(b, flowable.Just(1))
		return func(context.Context) func() {
			var sub flowable.Subscription
			p.Subscribe(flowable.Funcs[int]{Start: func(s flowable.Subscription) {
				sub = s
				s.Request(1)
			}})
			return sub.Cancel
		}
	}},
	{"observable", func(b *bulkhead.Semaphore) func(context.Context) func() {
		return observed(observable.Bulkhead(b, rxgo.Just(1)()))
	}},
	{"observable+Map", func(b *bulkhead.Semaphore) func(context.Context) func() {
		return observed(observable.Bulkhead(b, rxgo.Just(1)()).Map(identity))
	}},
	{"single", func(b *bulkhead.Semaphore) func(context.Context) func() {
		return observed(single.Bulkhead(b, rxgo.JustItem(1)))
	}},
	{"maybe", func(b *bulkhead.Semaphore) func(context.Context) func() {
		return observed(maybe.Bulkhead(b, rxgo.Just(1)().First()))
	}},
	{"completable", func(b *bulkhead.Semaphore) func(context.Context) func() {
		c := completable.Bulkhead(b, completable.Complete())
		return func(context.Context) func() {
			var d completable.Disposable
			c.Subscribe(observer{onSubscribe: func(x completable.Disposable) { d = x }})
			return d.Dispose
		}
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
	b, err := bulkhead.New("pending", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
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
func batch(tb testing.TB, call func(context.Context) func(), b *bulkhead.Semaphore, withdraws []func()) func() {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	for i := range withdraws {
		withdraws[i] = call(ctx)
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
			tb.Fatalf("%d call(s) queued and %d permit(s) held after withdrawing all", m.QueuedCalls, m.InFlightCalls)
		}
	}
}

// cost measures k: goroutines and bytes (live heap + stacks, after a GC)
// per pending call, with pending calls queued at once. The figure includes
// the 16 B or so per call that the benchmark keeps to withdraw it.
func cost(b *testing.B, k kind, pending int) {
	s := full(b)
	call := k.build(s)
	withdraws := make([]func(), pending)
	timer := func(on bool) {
		if on {
			b.StartTimer()
		} else {
			b.StopTimer()
		}
	}
	for b.Loop() {
		g, bytes, end := footprint(b, call, s, withdraws, timer)
		b.ReportMetric(g, "goroutines/pending")
		b.ReportMetric(bytes, "B/pending")
		end()
		b.StartTimer()
	}
}

// footprint queues len(withdraws) calls on s and returns the goroutines
// and bytes (live heap + stacks, after a GC) each holds, and the func that
// withdraws them all. timer(true) starts and timer(false) stops the
// timing of the queueing; it is stopped when footprint returns.
func footprint(tb testing.TB, call func(context.Context) func(), s *bulkhead.Semaphore, withdraws []func(), timer func(on bool)) (goroutines, bytes float64, end func()) {
	tb.Helper()
	timer(false)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	timer(true)
	withdrawAll := batch(tb, call, s, withdraws)
	timer(false)
	runtime.GC()
	runtime.ReadMemStats(&after)
	n := float64(len(withdraws))
	goroutines = float64(runtime.NumGoroutine()-g0) / n
	bytes = float64(int64(after.HeapAlloc+after.StackInuse)-int64(before.HeapAlloc+before.StackInuse)) / n
	return goroutines, bytes, func() {
		withdrawAll()
		clear(withdraws) // the next "before" must not count this batch
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
			end := batch(t, k.build(b), b, make([]func(), 50))
			if got := b.Metrics().QueuedCalls; got != 50 {
				t.Fatalf("%d calls queued, want 50", got)
			}
			end()
		})
	}
}
