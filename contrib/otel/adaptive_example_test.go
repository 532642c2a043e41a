package otel_test

import (
	"context"
	"fmt"
	"log"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	bulkheadotel "github.com/rxbulkhead/bulkhead/contrib/otel"
)

// StartAdaptive observes each partner's adaptive limit.
func ExampleStartAdaptive() {
	registry, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		log.Fatal(err)
	}
	partners, err := adaptive.NewRegistry(registry, adaptive.Config{Min: 5, Max: 200})
	if err != nil {
		log.Fatal(err)
	}
	_, _ = partners.Get("walmart")

	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	instruments, err := bulkheadotel.StartAdaptive(partners, bulkheadotel.WithMeterProvider(provider))
	if err != nil {
		log.Fatal(err)
	}
	defer instruments.Close()

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if g, ok := m.Data.(metricdata.Gauge[int64]); ok {
			fmt.Println(m.Name, g.DataPoints[0].Value)
		}
	}
	// Output:
	// bulkhead.adaptive.limit 20
	// bulkhead.adaptive.at_floor 0
}
