package prometheus_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
	"github.com/rxbulkhead/bulkhead/pool"
)

func newPoolRegistry(t *testing.T, cfg pool.Config) *pool.Registry {
	t.Helper()
	r, err := pool.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return r
}

func mustPool(t *testing.T, r *pool.Registry, name string) *pool.Pool {
	t.Helper()
	p, err := r.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// blockUntil returns a task that blocks until gate is closed.
func blockUntil(gate chan struct{}) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return 0, nil
	}
}

func TestPoolsExportTheSemaphoreMetricSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		preg := newPoolRegistry(t, pool.Config{MaxWorkers: 1, CoreWorkers: 1, QueueCapacity: 1, KeepAlive: time.Second, MaxQueueWait: bulkhead.NoTimeout})
		p := mustPool(t, preg, "reports")
		c := bulkheadprom.NewCollector(preg.MetricsSource(), bulkheadprom.WithWaitBuckets(time.Millisecond, 100*time.Millisecond, time.Second),
			bulkheadprom.WithCallDurationBuckets(time.Millisecond, time.Second))
		defer c.Close()

		gate := make(chan struct{})
		f1 := pool.Submit(context.Background(), p, blockUntil(gate))
		synctest.Wait()
		f2 := pool.Submit(context.Background(), p, blockUntil(gate))
		f3 := pool.Submit(context.Background(), p, blockUntil(gate)) // QueueFull
		if _, err := f3.Get(context.Background()); err == nil {
			t.Fatal("f3 was not rejected")
		}
		mfs := gather(t, c)
		for name, want := range map[string]float64{
			"bulkhead_available_concurrent_calls": 0, "bulkhead_max_allowed_concurrent_calls": 1,
			"bulkhead_queued_calls": 1, "bulkhead_max_queued_calls": 1,
		} {
			if got := find(t, mfs[name], "name=reports").GetGauge().GetValue(); got != want {
				t.Errorf("%s = %v, want %v", name, got, want)
			}
		}
		time.Sleep(50 * time.Millisecond)
		close(gate) // f2 starts after 50 ms in the queue
		for _, f := range []*pool.Future[int]{f1, f2} {
			if _, err := f.Get(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()

		mfs = gather(t, c)
		for kind, want := range map[string]float64{"permitted": 2, "rejected": 1, "finished": 2, "cancelled": 0} {
			if got := find(t, mfs["bulkhead_calls_total"], "name=reports", "kind="+kind).GetCounter().GetValue(); got != want {
				t.Errorf("calls %s = %v, want %v", kind, got, want)
			}
		}
		granted := find(t, mfs["bulkhead_wait_duration_seconds"], "name=reports", "outcome=granted").GetHistogram()
		if got, want := buckets(granted), map[float64]uint64{0.001: 1, 0.1: 2, 1: 2}; !equal(got, want) || !near(granted.GetSampleSum(), 0.05) {
			t.Errorf("granted buckets %v sum %v, want %v and 0.05", got, granted.GetSampleSum(), want)
		}
		if got := find(t, mfs["bulkhead_rejected_calls_total"], "name=reports", "reason=queue_full").GetCounter().GetValue(); got != 1 {
			t.Errorf("queue_full = %v, want 1", got)
		}
		// f1 ran 50 ms, f2 no time at all on the bubble's clock: a pool
		// times every task, and a zero duration is not counted.
		ran := find(t, mfs["bulkhead_call_duration_seconds"], "name=reports").GetHistogram()
		if got, want := buckets(ran), map[float64]uint64{0.001: 0, 1: 1}; !equal(got, want) || !near(ran.GetSampleSum(), 0.05) {
			t.Errorf("call duration buckets %v sum %v, want %v and 0.05", got, ran.GetSampleSum(), want)
		}
	})
}

func TestCollectorWithPoolsReportsBothKindsAndSkipsASharedName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2})
		mustBulkhead(t, r, "shared")
		mustBulkhead(t, r, "sem")
		preg := newPoolRegistry(t, pool.Config{MaxWorkers: 3, CoreWorkers: 1, QueueCapacity: 5, KeepAlive: time.Second, MaxQueueWait: bulkhead.NoTimeout})
		mustPool(t, preg, "shared")
		c := bulkheadprom.NewCollector(r, bulkheadprom.WithPools(preg))
		defer c.Close()
		late := mustPool(t, preg, "late") // created after the collector: counted from its creation
		if _, err := pool.Submit(context.Background(), late, func(context.Context) (int, error) { return 1, nil }).Get(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		mfs := gather(t, c) // pedantic: no duplicate series
		maxAllowed := mfs["bulkhead_max_allowed_concurrent_calls"]
		if n := len(maxAllowed.GetMetric()); n != 3 {
			t.Fatalf("%d series of max_allowed, want 3 (sem, shared as the Semaphore, late)", n)
		}
		if got := find(t, maxAllowed, "name=shared").GetGauge().GetValue(); got != 2 {
			t.Errorf("shared reports %v, want the Semaphore's 2", got)
		}
		if got := find(t, maxAllowed, "name=late").GetGauge().GetValue(); got != 3 {
			t.Errorf("late reports %v, want the pool's 3", got)
		}
		if got := find(t, mfs["bulkhead_calls_total"], "name=late", "kind=finished").GetCounter().GetValue(); got != 1 {
			t.Errorf("late pool finished = %v, want 1", got)
		}
		if got := mfs["bulkhead_registry_bulkheads"].GetMetric()[0].GetGauge().GetValue(); got != 4 {
			t.Errorf("registry bulkheads = %v, want 4 (2 Semaphores, 2 pools)", got)
		}
	})
}

func TestWithPoolsPanicsOnNilRegistry(t *testing.T) {
	defer func() {
		if r := recover(); r != "bulkhead/contrib/prometheus: WithPools called with a nil *pool.Registry" {
			t.Fatalf("recovered %v", r)
		}
	}()
	bulkheadprom.NewCollector(newRegistry(t, bulkhead.DefaultConfig()), bulkheadprom.WithPools(nil)).Close()
}
