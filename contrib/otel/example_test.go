package otel_test

import (
	"context"
	"fmt"
	"log"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rxbulkhead/bulkhead"
	bulkheadotel "github.com/rxbulkhead/bulkhead/contrib/otel"
)

// Start observes every bulkhead of a registry; here a manual reader stands
// in for an exporter.
func ExampleStart() {
	registry, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		log.Fatal(err)
	}
	walmart, _ := registry.Get("walmart")

	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	instruments, err := bulkheadotel.Start(registry, bulkheadotel.WithMeterProvider(provider))
	if err != nil {
		panic(err)
	}
	defer instruments.Close()

	walmart.TryAcquirePermission()
	defer walmart.FinishCall()

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if g, ok := m.Data.(metricdata.Gauge[int64]); ok {
			fmt.Println(m.Name, g.DataPoints[0].Value)
		}
	}
	// Output:
	// bulkhead.available_concurrent_calls 19
	// bulkhead.max_allowed_concurrent_calls 20
	// bulkhead.queued_calls 0
	// bulkhead.max_queued_calls 0
	// bulkhead.registry.bulkheads 1
}

// In a service, Start uses the global meter provider that the service set
// up with its exporter (OTLP, Prometheus, ...).
func Example_globalProvider() {
	registry, err := bulkhead.NewRegistry(bulkhead.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}

	instruments, err := bulkheadotel.Start(registry)
	if err != nil {
		log.Fatal(err)
	}
	defer instruments.Close()
}

// The call durations: every call whose finish knew its start (here the
// registry's Lease) is recorded in bulkhead.call.duration; the pools of
// WithPools are recorded alike.
func ExampleStart_callDuration() {
	registry, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		log.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	instruments, err := bulkheadotel.Start(registry, bulkheadotel.WithMeterProvider(provider),
		bulkheadotel.WithCallDurationBuckets(10*time.Millisecond, 100*time.Millisecond, time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer instruments.Close()

	for range 3 {
		lease, err := registry.TryAcquirePermission("walmart", bulkhead.CallOptions{})
		if err != nil {
			log.Fatal(err)
		}
		lease.FinishCall() // a call of a few nanoseconds
	}

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == "bulkhead.call.duration" {
			p := h.DataPoints[0]
			fmt.Println(m.Name, m.Unit, p.Count, p.Bounds, p.BucketCounts)
		}
	}
	// Output:
	// bulkhead.call.duration s 3 [0.01 0.1 1] [3 0 0 0]
}
