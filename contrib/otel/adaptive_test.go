package otel_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	bulkheadotel "github.com/rxbulkhead/bulkhead/contrib/otel"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestAdaptiveInstrumentsObserveLimitEstimateAndRTT(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, reg)
	ar, err := adaptive.NewRegistry(reg, adaptive.Config{Algorithm: func() adaptive.Algorithm { return &adaptive.AIMD{} }}, adaptive.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	in, err := bulkheadotel.StartAdaptive(ar, bulkheadotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	walmart, _ := ar.Get("walmart")
	var calls []adaptive.Call
	for range 10 {
		c, _ := walmart.TryAcquire()
		calls = append(calls, c)
	}
	clock.Advance(250 * time.Millisecond)
	for _, c := range calls {
		c.Finish(nil)
	}
	collect := func() map[string]float64 {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch d := m.Data.(type) {
				case metricdata.Gauge[int64]:
					for _, p := range d.DataPoints {
						out[m.Name+"{"+attrs(p.Attributes)+"}"] = float64(p.Value)
					}
				case metricdata.Gauge[float64]:
					for _, p := range d.DataPoints {
						out[m.Name+"{"+attrs(p.Attributes)+"}"] = p.Value
					}
				}
			}
		}
		return out
	}
	got := collect()
	want := map[string]float64{
		"bulkhead.adaptive.limit{name=walmart}":    11,
		"bulkhead.adaptive.estimate{name=walmart}": 11,
		"bulkhead.adaptive.rtt{name=walmart}":      0.25,
		"bulkhead.adaptive.at_floor{name=walmart}": 0,
	}
	for k, v := range want {
		if gv, ok := got[k]; !ok || gv != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if got := collect(); len(got) != 0 {
		t.Errorf("after Close: %v", got)
	}
}
