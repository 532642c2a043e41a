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

// StartBudgets observes a hub budget's permits per class and group and
// counts its calls; here a manual reader stands in for an exporter.
func ExampleStartBudgets() {
	hub, err := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size:           100,
		MaxQueuedCalls: bulkhead.Unbounded,
		Classes: []bulkhead.ClassConfig{
			{Name: "interactive", Headroom: 10, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
			{Name: "batch", Share: 20, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	instruments, err := bulkheadotel.StartBudgets([]*bulkhead.Budget{hub}, bulkheadotel.WithMeterProvider(provider))
	if err != nil {
		log.Fatal(err)
	}
	defer instruments.Close()

	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 20})
	partner, _ := hub.Partner(walmart, bulkhead.PartnerOptions{})
	batch, _ := hub.Class("batch")
	document := partner.Call(batch, 8) // a 10 MB EDI batch: 8 permits
	document.AcquirePermissionAsync()
	defer document.FinishCall()

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		var points []metricdata.DataPoint[int64]
		switch d := m.Data.(type) {
		case metricdata.Gauge[int64]:
			points = d.DataPoints
		case metricdata.Sum[int64]:
			points = d.DataPoints
		}
		for _, p := range points {
			if class, _ := p.Attributes.Value("class"); class.AsString() == "batch" && p.Value > 0 {
				fmt.Println(m.Name, p.Value)
			}
		}
	}
	// Output:
	// bulkhead.budget.permits_in_use 8
	// bulkhead.budget.calls 1
	// bulkhead.budget.granted_permits 8
}
