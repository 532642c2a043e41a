package prometheus_test

import (
	"fmt"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rxbulkhead/bulkhead"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
)

// The budget collector reports a hub budget's permits and queues per class
// and group, and counts its calls, permits granted, rejections and waits
// per class; partners' own bulkheads go through a Collector over their
// registry.
func ExampleNewBudgetCollector() {
	hub, err := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size:           100,
		MaxQueuedCalls: bulkhead.Unbounded,
		Classes: []bulkhead.ClassConfig{
			{Name: "interactive", Headroom: 10, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
			{Name: "batch", Share: 20, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded},
		},
		Groups: []bulkhead.GroupConfig{{Name: "gold", Nominal: 30, Lendable: 20, BorrowingLimit: bulkhead.Unbounded}},
	})
	if err != nil {
		log.Fatal(err)
	}
	collector := bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{hub})
	defer collector.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector)

	// A call takes its weight of walmart's bulkhead too: room for both.
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 200})
	partner, _ := hub.Partner(walmart, bulkhead.PartnerOptions{Group: "gold"})
	batch, _ := hub.Class("batch")
	document := partner.Call(batch, 8) // a 10 MB EDI batch: 8 permits
	document.AcquirePermissionAsync()
	defer document.FinishCall()
	archive := partner.Call(batch, 95) // 92 permits free: it waits
	waiting := archive.AcquirePermissionAsync()
	defer waiting.Cancel()

	families, _ := reg.Gather()
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			value := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			if value > 0 && !strings.HasPrefix(mf.GetName(), "bulkhead_budget_max_queued") {
				fmt.Println(mf.GetName(), strings.Join(labels, " "), value)
			}
		}
	}
	// Output:
	// bulkhead_budget_available_permits budget=hub 92
	// bulkhead_budget_calls_total budget=hub class=batch kind=permitted 1
	// bulkhead_budget_granted_permits_total budget=hub class=batch 8
	// bulkhead_budget_group_nominal_permits budget=hub group=gold 30
	// bulkhead_budget_group_permits_in_use budget=hub group=gold 8
	// bulkhead_budget_group_queued_calls budget=hub group=gold 1
	// bulkhead_budget_group_reserved_permits budget=hub group=gold 2
	// bulkhead_budget_max_allowed_permits budget=hub 100
	// bulkhead_budget_partners budget=hub 1
	// bulkhead_budget_permits_in_use budget=hub class=batch 8
	// bulkhead_budget_queued_calls budget=hub class=batch 1
}

// Serving a hub budget's metrics beside those of its partners' registry.
func ExampleNewBudgetCollector_handler() {
	hub, err := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size:           1000,
		MaxQueuedCalls: bulkhead.Unbounded,
		Classes: []bulkhead.ClassConfig{
			{Name: "interactive", Headroom: 20, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
			{Name: "batch", Share: 50, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	partners, err := bulkhead.NewRegistry(bulkhead.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}

	prometheus.MustRegister(bulkheadprom.NewCollector(partners), bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{hub}))
	http.Handle("/metrics", promhttp.Handler())
	// http.ListenAndServe(":9090", nil)
}
