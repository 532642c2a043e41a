package prometheus_test

import (
	"fmt"
	"log"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
)

// The adaptive collector reports each partner's adaptive limit.
func ExampleNewAdaptiveCollector() {
	registry, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		log.Fatal(err)
	}
	partners, err := adaptive.NewRegistry(registry, adaptive.Config{Min: 5, Max: 200})
	if err != nil {
		log.Fatal(err)
	}
	_, _ = partners.Get("walmart")

	reg := prometheus.NewRegistry()
	reg.MustRegister(bulkheadprom.NewAdaptiveCollector(partners))
	families, _ := reg.Gather()
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			fmt.Println(mf.GetName(), m.GetLabel()[0].GetValue(), m.GetGauge().GetValue())
		}
	}
	// Output:
	// bulkhead_adaptive_at_floor walmart 0
	// bulkhead_adaptive_estimate walmart 20
	// bulkhead_adaptive_floor_seconds_total walmart 0
	// bulkhead_adaptive_limit walmart 20
	// bulkhead_adaptive_rtt_seconds walmart 0
}
