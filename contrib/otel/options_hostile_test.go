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

// WithMeterProvider(nil) (a provider variable not set yet) used the global
// provider without a word, a no-op one unless the program set it: the
// instruments reported to nobody. Each Start fails naming it instead.
func TestStartRefusesWithMeterProviderOfANilProvider(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	ar, err := adaptive.NewRegistry(r, adaptive.Config{Algorithm: func() adaptive.Algorithm { return &adaptive.AIMD{} }}, adaptive.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	b := newHubBudget(t, "hub", clock)
	const want = "bulkhead/contrib/otel: WithMeterProvider called with a nil metric.MeterProvider"
	check := func(name string, closer interface{ Close() error }, err error) {
		t.Helper()
		if err == nil || err.Error() != want {
			t.Errorf("%s(WithMeterProvider(nil)) = %v; want %q", name, err, want)
		}
		if err == nil {
			_ = closer.Close()
		}
	}
	in, err := bulkheadotel.Start(r, bulkheadotel.WithMeterProvider(nil))
	check("Start", in, err)
	ain, err := bulkheadotel.StartAdaptive(ar, bulkheadotel.WithMeterProvider(nil))
	check("StartAdaptive", ain, err)
	bin, err := bulkheadotel.StartBudgets([]*bulkhead.Budget{b}, bulkheadotel.WithMeterProvider(nil))
	check("StartBudgets", bin, err)
	var sdk *sdkmetric.MeterProvider // a typed nil
	in, err = bulkheadotel.Start(r, bulkheadotel.WithMeterProvider(sdk))
	check("Start", in, err)
}
