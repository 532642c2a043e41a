package prometheus_test

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rxbulkhead/bulkhead"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
	"github.com/rxbulkhead/bulkhead/pool"
)

// The collector reports every bulkhead of the registry (any
// bulkhead.MetricsSource).
func ExampleNewCollector() {
	registry, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20, MaxQueuedCalls: 100})
	if err != nil {
		log.Fatal(err)
	}
	walmart, _ := registry.Get("walmart")

	collector := bulkheadprom.NewCollector(registry)
	defer collector.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector)

	// A call through the registry's Lease: its CallFinished carries its
	// duration, which the call-duration histogram counts.
	lease, err := registry.TryAcquirePermission("walmart", bulkhead.CallOptions{})
	if err != nil {
		log.Fatal(err)
	}
	lease.FinishCall()
	walmart.TryAcquirePermission() // one call in flight

	families, _ := reg.Gather()
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			var labels string
			for _, l := range m.GetLabel() {
				labels += fmt.Sprintf(" %s=%s", l.GetName(), l.GetValue())
			}
			value := m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
			fmt.Printf("%s%s %v\n", mf.GetName(), labels, value)
		}
	}
	walmart.FinishCall()
	// Output:
	// bulkhead_available_concurrent_calls name=walmart 19
	// bulkhead_call_duration_seconds name=walmart 1
	// bulkhead_calls_total kind=cancelled name=walmart 0
	// bulkhead_calls_total kind=finished name=walmart 1
	// bulkhead_calls_total kind=permitted name=walmart 2
	// bulkhead_calls_total kind=rejected name=walmart 0
	// bulkhead_max_allowed_concurrent_calls name=walmart 20
	// bulkhead_max_queued_calls name=walmart 100
	// bulkhead_queued_calls name=walmart 0
	// bulkhead_registry_bulkheads 1
	// bulkhead_registry_catch_all_calls_total 0
	// bulkhead_registry_evictions_total 0
	// bulkhead_rejected_calls_total name=walmart reason=evicted 0
	// bulkhead_rejected_calls_total name=walmart reason=no_wait 0
	// bulkhead_rejected_calls_total name=walmart reason=queue_full 0
	// bulkhead_rejected_calls_total name=walmart reason=unavailable 0
	// bulkhead_rejected_calls_total name=walmart reason=wait_timeout 0
	// bulkhead_wait_duration_seconds name=walmart outcome=granted 2
	// bulkhead_wait_duration_seconds name=walmart outcome=rejected 0
}

// Serving the metrics of a registry of partner bulkheads on /metrics.
func Example_handler() {
	registry, err := bulkhead.NewRegistry(bulkhead.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}

	prometheus.MustRegister(bulkheadprom.NewCollector(registry))
	http.Handle("/metrics", promhttp.Handler())
	// http.ListenAndServe(":9090", nil)
}

// printGauge prints the series of one gauge of a gathered registry.
func printGauge(reg *prometheus.Registry, name string) {
	families, _ := reg.Gather()
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels string
			for _, l := range m.GetLabel() {
				labels += " " + l.GetValue()
			}
			fmt.Printf("%s%s %v\n", name, labels, m.GetGauge().GetValue())
		}
	}
}

// One Collector for the Semaphores of a registry and the pools of a
// pool.Registry: both kinds export the same metric set, a pool's workers
// as its permits.
func ExampleWithPools() {
	semaphores, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		log.Fatal(err)
	}
	pools, err := pool.NewRegistry(pool.Config{MaxWorkers: 4})
	if err != nil {
		log.Fatal(err)
	}
	defer pools.Close(context.Background())
	_, _ = semaphores.Get("walmart")
	_, _ = pools.Get("resizer")

	collector := bulkheadprom.NewCollector(semaphores, bulkheadprom.WithPools(pools))
	defer collector.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector)
	printGauge(reg, "bulkhead_max_allowed_concurrent_calls")
	// Output:
	// bulkhead_max_allowed_concurrent_calls resizer 4
	// bulkhead_max_allowed_concurrent_calls walmart 20
}

// Any bulkhead.MetricsSource can be added to a Collector: here a second
// registry; the fleet's Registry of contrib/redis is one too.
func ExampleWithSources() {
	partners, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		log.Fatal(err)
	}
	internal, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 5})
	if err != nil {
		log.Fatal(err)
	}
	_, _ = partners.Get("walmart")
	_, _ = internal.Get("pricing")

	collector := bulkheadprom.NewCollector(partners, bulkheadprom.WithSources(internal))
	defer collector.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector)
	printGauge(reg, "bulkhead_max_allowed_concurrent_calls")
	printGauge(reg, "bulkhead_registry_bulkheads")
	// Output:
	// bulkhead_max_allowed_concurrent_calls pricing 5
	// bulkhead_max_allowed_concurrent_calls walmart 20
	// bulkhead_registry_bulkheads 2
}
