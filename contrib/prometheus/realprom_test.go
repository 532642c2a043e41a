package prometheus_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rxbulkhead/bulkhead"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
	"github.com/rxbulkhead/bulkhead/internal/metricstest"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// A real Prometheus scrapes a test server whose Semaphores and pool run
// under load, and its PromQL answers match what the test did: the 99th
// percentile of the waits and of the call durations, the rejections by
// reason (counts and rates), the permits.
func TestRealPrometheusAnswersPromQLAboutTheLoadTheTestRan(t *testing.T) {
	buckets := []time.Duration{time.Millisecond, 5 * time.Millisecond, 25 * time.Millisecond, 100 * time.Millisecond, time.Second}
	durationBuckets := []time.Duration{time.Millisecond, 2500 * time.Microsecond, 4 * time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond}
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1},
		bulkhead.WithConfig("handoff", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded}),
		bulkhead.WithConfig("mixed", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 7 * time.Millisecond, MaxQueuedCalls: 2}))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	handoff, _ := r.GetWithConfig("handoff", "handoff")
	mixed, _ := r.GetWithConfig("mixed", "mixed")
	preg, err := pool.NewRegistry(pool.Config{MaxWorkers: 1, CoreWorkers: 1, QueueCapacity: 1, KeepAlive: time.Second, MaxQueueWait: bulkhead.NoTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = preg.Close(context.Background()) }()
	reports, _ := preg.Get("reports")

	// What the test did, from its own listeners.
	var mu sync.Mutex
	handoffWaits := metricstest.NewHistogram(buckets)
	reasons := map[bulkhead.Reason]int{}
	handoff.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallPermitted {
			handoffWaits.Add(e.Wait)
		}
	})
	mixed.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallRejected {
			mu.Lock()
			reasons[e.Reason]++
			mu.Unlock()
		}
	})
	var poolRejected atomic.Int64
	// The call durations the test's listeners see, by bulkhead: handoff's
	// through FinishCallStarted, mixed's through the registry's Lease,
	// the pool's tasks.
	durations := map[string]*metricstest.Histogram{}
	for _, name := range []string{"handoff", "mixed", "reports"} {
		durations[name] = metricstest.NewHistogram(durationBuckets)
	}
	recordDuration := func(e bulkhead.Event) {
		if e.Type == bulkhead.CallFinished && e.CallDuration > 0 {
			durations[e.Name].Add(e.CallDuration)
		}
	}
	handoff.OnEvent(recordDuration)
	mixed.OnEvent(recordDuration)
	reports.OnEvent(recordDuration)

	c := bulkheadprom.NewCollector(r, bulkheadprom.WithPools(preg), bulkheadprom.WithWaitBuckets(buckets...),
		bulkheadprom.WithCallDurationBuckets(durationBuckets...))
	defer c.Close()
	prom := scrapedByPrometheus(t, c)
	// A first scrape sees every series at zero, so rate and increase
	// cover every call of the load.
	prom.Await(t, `up{job="bulkheads"}`, 1, 20*time.Second)
	prom.Await(t, `sum(bulkhead_calls_total{name="mixed"})`, 0, 5*time.Second)

	// The load, for 3 s: two callers hand handoff's one permit to each
	// other (each holds it ~2 ms, so each waits ~2 ms); four callers share
	// mixed's permit (held ~5 ms; a queue of 2 and a 7 ms wait give
	// queue_full and wait_timeout), and a fifth only tries (no_wait);
	// three submitters share the pool's one worker and one queue slot
	// (queue_full). A rejected caller backs off 1 ms.
	ctx, stop := context.WithTimeout(context.Background(), 3*time.Second)
	defer stop()
	var load sync.WaitGroup
	run := func(f func()) {
		load.Add(1)
		go func() {
			defer load.Done()
			for ctx.Err() == nil {
				f()
			}
		}()
	}
	for range 2 {
		run(func() {
			if handoff.AcquirePermission(context.Background()) == nil {
				start := handoff.StartCall()
				time.Sleep(2 * time.Millisecond)
				handoff.FinishCallStarted(start)
			}
		})
	}
	for range 4 {
		run(func() {
			if lease, err := r.AcquirePermission(context.Background(), "mixed", bulkhead.CallOptions{}); err == nil {
				time.Sleep(5 * time.Millisecond)
				lease.FinishCall()
			} else {
				time.Sleep(time.Millisecond)
			}
		})
	}
	run(func() {
		if lease, err := r.TryAcquirePermission("mixed", bulkhead.CallOptions{}); err == nil {
			lease.FinishCall()
		}
		time.Sleep(time.Millisecond)
	})
	for range 3 {
		run(func() {
			f := pool.Submit(context.Background(), reports, func(context.Context) (int, error) {
				time.Sleep(3 * time.Millisecond)
				return 0, nil
			})
			if _, err := f.Get(context.Background()); err != nil {
				poolRejected.Add(1)
				time.Sleep(time.Millisecond)
			}
		})
	}
	load.Wait()
	coda(t, r, handoff, mixed, reports, &poolRejected)

	mu.Lock()
	defer mu.Unlock()
	granted, cum := handoffWaits.Cumulative()
	// Wait for a scrape after the load.
	prom.Await(t, `bulkhead_wait_duration_seconds_count{name="handoff",outcome="granted"}`, float64(granted), 10*time.Second)
	for _, reason := range []bulkhead.Reason{bulkhead.NoWait, bulkhead.QueueFull, bulkhead.WaitTimeout} {
		label := map[bulkhead.Reason]string{bulkhead.NoWait: "no_wait", bulkhead.QueueFull: "queue_full", bulkhead.WaitTimeout: "wait_timeout"}[reason]
		prom.Await(t, fmt.Sprintf(`bulkhead_rejected_calls_total{name="mixed",reason=%q}`, label), float64(reasons[reason]), 5*time.Second)
		if reasons[reason] == 0 {
			t.Errorf("the load made no %s rejection: the test checks nothing for it", label)
		}
	}
	prom.Await(t, `bulkhead_rejected_calls_total{name="reports",reason="queue_full"}`, float64(poolRejected.Load()), 5*time.Second)
	if poolRejected.Load() == 0 {
		t.Error("the load made no pool rejection: the test checks nothing for it")
	}

	// The 99th percentile of handoff's waits, as the test computes it from
	// its own observations with the same buckets.
	want := metricstest.Quantile(0.99, metricstest.Seconds(buckets), cum)
	got := prom.One(t, `histogram_quantile(0.99, rate(bulkhead_wait_duration_seconds_bucket{name="handoff",outcome="granted"}[30s]))`)
	if math.Abs(got-want) > 1e-9*want {
		t.Errorf("p99 of handoff's waits: Prometheus %v, the test's own observations %v (buckets %v)", got, want, cum)
	}
	// The rejection rate by reason: each reason's share of mixed's
	// rejections equals the test's.
	total := float64(reasons[bulkhead.NoWait] + reasons[bulkhead.QueueFull] + reasons[bulkhead.WaitTimeout] + reasons[bulkhead.Evicted])
	rates, err := prom.Query(`sum by (reason) (rate(bulkhead_rejected_calls_total{name="mixed"}[30s])) / scalar(sum(rate(bulkhead_rejected_calls_total{name="mixed"}[30s])))`)
	if err != nil {
		t.Fatal(err)
	}
	byLabel := map[string]bulkhead.Reason{"no_wait": bulkhead.NoWait, "queue_full": bulkhead.QueueFull, "wait_timeout": bulkhead.WaitTimeout, "evicted": bulkhead.Evicted, "unavailable": bulkhead.Unavailable}
	if len(rates) != len(byLabel) {
		t.Fatalf("rejection shares: %v, want %d reasons", rates, len(byLabel))
	}
	for _, s := range rates {
		share := float64(reasons[byLabel[s.Metric["reason"]]]) / total
		if math.Abs(s.Value-share) > 1e-9 {
			t.Errorf("share of %s: Prometheus %v, the test %v", s.Metric["reason"], s.Value, share)
		}
	}
	// The call durations: every timed call counted, and the 99th
	// percentile of each bulkhead's, as the test computes it from its own
	// observations with the same buckets.
	for _, name := range []string{"handoff", "mixed", "reports"} {
		n, cum := durations[name].Cumulative()
		if n == 0 {
			t.Errorf("%s: no timed call: the test checks nothing for it", name)
			continue
		}
		prom.Await(t, fmt.Sprintf(`bulkhead_call_duration_seconds_count{name=%q}`, name), float64(n), 5*time.Second)
		want := metricstest.Quantile(0.99, metricstest.Seconds(durationBuckets), cum)
		got := prom.One(t, fmt.Sprintf(`histogram_quantile(0.99, rate(bulkhead_call_duration_seconds_bucket{name=%q}[30s]))`, name))
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("p99 of %s's call durations: Prometheus %v, the test's own observations %v (buckets %v)", name, got, want, cum)
		}
		t.Logf("%s: %d timed calls, p99 %.4fs", name, n, got)
	}
	// Every finished call of handoff and mixed was timed (FinishCallStarted,
	// the Lease), and every task of the pool.
	for _, name := range []string{"handoff", "mixed", "reports"} {
		if v := prom.One(t, fmt.Sprintf(`sum without (kind) (bulkhead_calls_total{name=%q,kind="finished"}) - bulkhead_call_duration_seconds_count{name=%[1]q}`, name)); v != 0 {
			t.Errorf("%s: %v finished calls without a duration", name, v)
		}
	}
	// The gauges, idle after the load.
	if v := prom.One(t, `bulkhead_available_concurrent_calls{name="reports"}`); v != 1 {
		t.Errorf("reports has %v free workers, want 1", v)
	}
	t.Logf("handoff: %d grants, p99 %.4fs; mixed rejections %v; pool rejections %d", granted, got, reasons, poolRejected.Load())
}

// coda makes, after the load, each outcome the test compares with
// Prometheus once more, whatever the scheduler did during the load (on a
// loaded machine its callers may seldom overlap, and a legal schedule can
// keep them apart for all 3 s): a timed handoff call; with mixed's one
// permit held (nothing else can grant: the load is over), a try rejected
// no_wait, two waiters that fill its queue of 2 and a third call rejected
// queue_full (the two wait without a bound meanwhile, then are cancelled:
// with mixed's 7 ms they could expire before the third call on a loaded
// machine), and a blocking call rejected wait_timeout after 7 ms; three blocked
// tasks for the pool's one worker and one queue slot, at least one
// rejected queue_full. The test's listeners count these like the load's
// calls, so every comparison below still covers every call.
func coda(t *testing.T, r *bulkhead.Registry, handoff, mixed *bulkhead.Semaphore, reports *pool.Pool, poolRejected *atomic.Int64) {
	t.Helper()
	if err := handoff.AcquirePermission(context.Background()); err != nil {
		t.Fatalf("handoff, idle: %v", err)
	}
	start := handoff.StartCall()
	time.Sleep(2 * time.Millisecond)
	handoff.FinishCallStarted(start)

	lease, err := r.TryAcquirePermission("mixed", bulkhead.CallOptions{})
	if err != nil {
		t.Fatalf("mixed, idle: %v", err)
	}
	defer lease.FinishCall()
	rejectedFor := func(err error, want bulkhead.Reason) {
		t.Helper()
		var fe *bulkhead.FullError
		if !errors.As(err, &fe) || fe.Reason != want {
			t.Fatalf("mixed: %v, want a %v rejection", err, want)
		}
	}
	_, err = r.TryAcquirePermission("mixed", bulkhead.CallOptions{})
	rejectedFor(err, bulkhead.NoWait)
	cfg := mixed.Config()
	unbounded := cfg
	unbounded.MaxWaitDuration = bulkhead.NoTimeout
	if err := mixed.ChangeConfig(unbounded); err != nil {
		t.Fatal(err)
	}
	a1, _ := r.AcquirePermissionAsync("mixed", bulkhead.CallOptions{})
	a2, _ := r.AcquirePermissionAsync("mixed", bulkhead.CallOptions{})
	a3, _ := r.AcquirePermissionAsync("mixed", bulkhead.CallOptions{})
	rejectedFor(a3.Err(), bulkhead.QueueFull)
	if !a1.Cancel() || !a2.Cancel() {
		t.Fatal("mixed: a waiter was decided while the coda held the permit")
	}
	if err := mixed.ChangeConfig(cfg); err != nil {
		t.Fatal(err)
	}
	// Blocking, so that its CallRejected is published (on this goroutine)
	// when it returns: a queued async call's is published by the goroutine
	// that decided it, after Done is closed (Semaphore.OnEvent).
	_, err = r.AcquirePermission(context.Background(), "mixed", bulkhead.CallOptions{})
	rejectedFor(err, bulkhead.WaitTimeout)

	release := make(chan struct{})
	var tasks []*pool.Future[int]
	for range 3 {
		tasks = append(tasks, pool.Submit(context.Background(), reports, func(context.Context) (int, error) {
			<-release
			return 0, nil
		}))
	}
	close(release)
	rejected := 0
	for _, f := range tasks {
		if _, err := f.Get(context.Background()); err != nil {
			rejected++
		}
	}
	if rejected == 0 {
		t.Fatal("three blocked tasks for one worker and one queue slot: none rejected")
	}
	poolRejected.Add(int64(rejected))
}

// scrapedByPrometheus serves c's exposition on a free 127.0.0.1 port until
// the test ends and starts a real Prometheus scraping it (skipped where
// none is installed, failed under CI).
func scrapedByPrometheus(t *testing.T, c prometheus.Collector) *metricstest.Prometheus {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return metricstest.StartPrometheus(t, l.Addr().String())
}
