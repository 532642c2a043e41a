package otel_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rxbulkhead/bulkhead"
	bulkheadotel "github.com/rxbulkhead/bulkhead/contrib/otel"
	"github.com/rxbulkhead/bulkhead/pool"
)

func TestWithPoolsObservesPoolsWithTheSemaphoreInstruments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2})
		mustBulkhead(t, r, "shared")
		preg, err := pool.NewRegistry(pool.Config{MaxWorkers: 1, CoreWorkers: 1, QueueCapacity: 1, KeepAlive: time.Second, MaxQueueWait: bulkhead.NoTimeout})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := preg.Close(context.Background()); err != nil {
				t.Error(err)
			}
		}()
		p, _ := preg.Get("reports")
		if _, err := preg.Get("shared"); err != nil {
			t.Fatal(err)
		}
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		defer func() { _ = mp.Shutdown(context.Background()) }()
		in, err := bulkheadotel.Start(r, bulkheadotel.WithMeterProvider(mp), bulkheadotel.WithPools(preg),
			bulkheadotel.WithWaitBuckets(time.Millisecond, 100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = in.Close() }()

		gate := make(chan struct{})
		block := func(ctx context.Context) (int, error) { <-gate; return 0, nil }
		f1 := pool.Submit(context.Background(), p, block)
		synctest.Wait()
		f2 := pool.Submit(context.Background(), p, block)
		if _, err := pool.Submit(context.Background(), p, block).Get(context.Background()); err == nil {
			t.Fatal("third task not rejected")
		}
		time.Sleep(20 * time.Millisecond)
		close(gate)
		_, _ = f1.Get(context.Background())
		_, _ = f2.Get(context.Background())
		synctest.Wait()

		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		ints := map[string]int64{}
		var granted metricdata.HistogramDataPoint[float64]
		for _, m := range rm.ScopeMetrics[0].Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					ints[m.Name+"{"+attrs(p.Attributes)+"}"] = p.Value
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					ints[m.Name+"{"+attrs(p.Attributes)+"}"] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if attrs(p.Attributes) == "name=reports,outcome=granted" {
						granted = p
					}
				}
			}
		}
		for k, want := range map[string]int64{
			"bulkhead.max_allowed_concurrent_calls{name=reports}":     1,
			"bulkhead.max_allowed_concurrent_calls{name=shared}":      2, // the Semaphore's, not the pool's
			"bulkhead.calls{kind=permitted,name=reports}":             2,
			"bulkhead.calls{kind=finished,name=reports}":              2,
			"bulkhead.rejected_calls{name=reports,reason=queue_full}": 1,
		} {
			if ints[k] != want {
				t.Errorf("%s = %d, want %d", k, ints[k], want)
			}
		}
		if granted.Count != 2 || !near(granted.Sum, 0.02) {
			t.Errorf("pool wait histogram: count %d sum %v, want 2 and 0.02", granted.Count, granted.Sum)
		}
	})
}
