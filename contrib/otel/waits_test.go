package otel_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rxbulkhead/bulkhead"
	bulkheadotel "github.com/rxbulkhead/bulkhead/contrib/otel"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// collectWaits starts instruments over r on a manual reader and returns a
// func that collects the wait histogram's points and the rejections, by
// "name,outcome" and "name,reason".
func collectWaits(t *testing.T, r *bulkhead.Registry, opts ...bulkheadotel.Option) func() (map[string]metricdata.HistogramDataPoint[float64], map[string]int64) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	in, err := bulkheadotel.Start(r, append([]bulkheadotel.Option{bulkheadotel.WithMeterProvider(mp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return func() (map[string]metricdata.HistogramDataPoint[float64], map[string]int64) {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		hist, rej := map[string]metricdata.HistogramDataPoint[float64]{}, map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch m.Name {
				case "bulkhead.wait.duration":
					if m.Unit != "s" {
						t.Errorf("unit %q, want s", m.Unit)
					}
					for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
						hist[attrs(p.Attributes)] = p
					}
				case "bulkhead.rejected_calls":
					for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
						rej[attrs(p.Attributes)] = p.Value
					}
				}
			}
		}
		return hist, rej
	}
}

func TestWaitHistogramRecordsEveryGrantAndRejectionWithItsWait(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 300 * time.Millisecond, MaxQueuedCalls: 2},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	s := mustBulkhead(t, r, "acme")
	collect := collectWaits(t, r, bulkheadotel.WithWaitBuckets(time.Millisecond, 100*time.Millisecond, time.Second))

	s.TryAcquirePermission()
	a := s.AcquirePermissionAsync()
	b := s.AcquirePermissionAsync()
	full := s.AcquirePermissionAsync() // QueueFull
	clock.Advance(50 * time.Millisecond)
	s.FinishCall()                        // a granted after 50 ms
	clock.Advance(250 * time.Millisecond) // b times out after 300 ms
	if a.Err() != nil || b.Err() == nil || full.Err() == nil {
		t.Fatalf("outcomes: %v %v %v", a.Err(), b.Err(), full.Err())
	}
	s.FinishCall()
	s.TryAcquirePermission()
	s.TryAcquirePermission() // NoWait
	s.FinishCall()

	hist, rej := collect()
	g := hist["name=acme,outcome=granted"]
	if !slices.Equal(g.Bounds, []float64{0.001, 0.1, 1}) || !slices.Equal(g.BucketCounts, []uint64{2, 1, 0, 0}) || g.Count != 3 || !near(g.Sum, 0.05) {
		t.Errorf("granted: bounds %v counts %v count %d sum %v", g.Bounds, g.BucketCounts, g.Count, g.Sum)
	}
	x := hist["name=acme,outcome=rejected"]
	if !slices.Equal(x.BucketCounts, []uint64{2, 0, 1, 0}) || x.Count != 3 || !near(x.Sum, 0.3) {
		t.Errorf("rejected: counts %v count %d sum %v", x.BucketCounts, x.Count, x.Sum)
	}
	want := map[string]int64{"name=acme,reason=no_wait": 1, "name=acme,reason=queue_full": 1, "name=acme,reason=wait_timeout": 1, "name=acme,reason=evicted": 0}
	for k, v := range want {
		if rej[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, rej[k], v, rej)
		}
	}
}

func TestRejectionCountsOfAnEvictedBulkheadAreDropped(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)), bulkhead.WithIdleTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	collect := collectWaits(t, r)
	a, l := r.AcquirePermissionAsync("tenant", bulkhead.CallOptions{})
	if a2, _ := r.AcquirePermissionAsync("tenant", bulkhead.CallOptions{}); a.Err() != nil || a2.Err() == nil {
		t.Fatal("outcomes")
	}
	l.FinishCall()
	if _, rej := collect(); rej["name=tenant,reason=no_wait"] != 1 {
		t.Fatalf("before eviction: %v", rej)
	}
	clock.Advance(2 * time.Second)
	if _, rej := collect(); len(rej) != 0 {
		t.Fatalf("after eviction: %v", rej)
	}
}

func TestStartRefusesBadWaitBuckets(t *testing.T) {
	r := newRegistry(t, bulkhead.DefaultConfig())
	mp := sdkmetric.NewMeterProvider()
	defer func() { _ = mp.Shutdown(context.Background()) }()
	_, err := bulkheadotel.Start(r, bulkheadotel.WithMeterProvider(mp), bulkheadotel.WithWaitBuckets(time.Second, time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "WithWaitBuckets") {
		t.Fatalf("err = %v, want one naming WithWaitBuckets", err)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestShadowedCallsAreObservedByWhatWouldHaveHappened(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, ShadowMode: true})
	s := mustBulkhead(t, r, "trial")
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	in, err := bulkheadotel.Start(r, bulkheadotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close() }()
	s.TryAcquirePermission()
	s.TryAcquirePermission() // would have been rejected: no_wait
	s.FinishCall()
	s.FinishCall()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == "bulkhead.shadowed_calls" {
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				got[attrs(p.Attributes)] = p.Value
			}
		}
	}
	want := map[string]int64{"name=trial,reason=would_wait": 0, "name=trial,reason=no_wait": 1, "name=trial,reason=queue_full": 0, "name=trial,reason=evicted": 0}
	if len(got) != len(want) {
		t.Fatalf("points %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
}
