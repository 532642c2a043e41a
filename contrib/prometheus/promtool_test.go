package prometheus_test

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
	"github.com/rxbulkhead/bulkhead/internal/metricstest"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// exposition renders what c exposes in the text format Prometheus scrapes.
func textExposition(t *testing.T, c prometheus.Collector) []byte {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// Every collector's exposition, with every series populated (waits, call
// durations, rejections of each reason, shadowed calls, pools, adaptive
// bulkheads, resilience4j names), passes promtool's linter.
func TestPromtoolChecksTheExpositionOfEveryCollector(t *testing.T) {
	promtool := metricstest.RequireTool(t, "promtool")
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 10 * time.Millisecond, MaxQueuedCalls: 1},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)),
		bulkhead.WithConfig("shadow", bulkhead.Config{MaxConcurrentCalls: 1, ShadowMode: true}))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	s := mustBulkhead(t, r, "partner")
	sh, _ := r.GetWithConfig("trial", "shadow")
	preg, err := pool.NewRegistry(pool.Config{MaxWorkers: 1, CoreWorkers: 1, QueueCapacity: 1, KeepAlive: time.Second, MaxQueueWait: bulkhead.NoTimeout},
		pool.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = preg.Close(context.Background()) }()
	reports, err := preg.Get("reports")
	if err != nil {
		t.Fatal(err)
	}
	ar, err := adaptive.NewRegistry(r, adaptive.Config{Algorithm: func() adaptive.Algorithm { return &adaptive.AIMD{} }}, adaptive.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ar.Get("adaptive-partner"); err != nil {
		t.Fatal(err)
	}
	collectors := map[string]prometheus.Collector{
		"Collector":                       bulkheadprom.NewCollector(r),
		"Collector WithPools":             bulkheadprom.NewCollector(r, bulkheadprom.WithPools(preg)),
		"Collector of pools":              bulkheadprom.NewCollector(preg.MetricsSource()),
		"Collector WithResilience4jNames": bulkheadprom.NewCollector(r, bulkheadprom.WithResilience4jNames(), bulkheadprom.WithWaitBuckets(time.Millisecond, time.Second), bulkheadprom.WithCallDurationBuckets(time.Second)),
		"AdaptiveCollector":               bulkheadprom.NewAdaptiveCollector(ar),
	}

	// Every series populated: waits, rejections of each reason, shadowed
	// calls, timed calls of a Semaphore and of a pool.
	s.TryAcquirePermission()
	start := s.StartCall()
	s.TryAcquirePermission() // no_wait
	a := s.AcquirePermissionAsync()
	s.AcquirePermissionAsync() // queue_full
	clock.Advance(10 * time.Millisecond)
	if a.Err() == nil {
		t.Fatal("no wait_timeout")
	}
	s.FinishCallStarted(start)
	sh.TryAcquirePermission()
	sh.TryAcquirePermission()
	sh.FinishCall()
	sh.FinishCall()
	if _, err := pool.Submit(context.Background(), reports, func(context.Context) (int, error) {
		clock.Advance(time.Millisecond) // the pool reads the same virtual clock
		return 0, nil
	}).Get(context.Background()); err != nil {
		t.Fatal(err)
	}

	for name, c := range collectors {
		if cl, ok := c.(interface{ Close() }); ok {
			defer cl.Close()
		}
		text := textExposition(t, c)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(text)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil || len(bytes.TrimSpace(out)) != 0 {
			t.Errorf("%s: promtool check metrics: %v\n%s\nexposition:\n%s", name, err, out, text)
		}
	}
}
