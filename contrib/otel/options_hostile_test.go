package otel_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	bulkheadotel "github.com/rxbulkhead/bulkhead/contrib/otel"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestStartAdaptiveRefusesANilOptionNamingIt(t *testing.T) {
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
	in, err := bulkheadotel.StartAdaptive(ar, bulkheadotel.WithMeterProvider(mp), nil)
	if err == nil || !strings.Contains(err.Error(), "StartAdaptive called with a nil Option") {
		t.Fatalf("StartAdaptive(r, opt, nil) = %v, %v; want an error naming the nil Option", in, err)
	}
	if in != nil {
		t.Fatalf("StartAdaptive returned instruments with its error")
	}
	// It registered nothing: a collection observes no adaptive limit.
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			t.Errorf("a failed StartAdaptive left instrument %s observed", m.Name)
		}
	}
}

func TestStartRefusesANilOptionNamingIt(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	in, err := bulkheadotel.Start(r, bulkheadotel.WithMeterProvider(mp), nil)
	if err == nil || !strings.Contains(err.Error(), "Start called with a nil Option") {
		t.Fatalf("Start(r, opt, nil) = %v, %v; want an error naming the nil Option", in, err)
	}
	if in != nil {
		t.Fatalf("Start returned instruments with its error")
	}
	s := mustBulkhead(t, r, "acme")
	if s.TryAcquirePermission() {
		s.FinishCall()
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			t.Errorf("a failed Start left instrument %s observed or recorded", m.Name)
		}
	}
}
