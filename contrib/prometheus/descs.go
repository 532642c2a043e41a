package prometheus

import "github.com/prometheus/client_golang/prometheus"

// bulkheadDescs are the descriptors of the per-bulkhead series that every
// kind exports alike (Collector for Semaphores, PoolCollector and
// WithPools for pools): one name, label set and help each, so that the
// kinds can share a prometheus.Registry and a dashboard.
type bulkheadDescs struct {
	available, maxAllowed, queued, maxQueued, calls *prometheus.Desc
}

func newBulkheadDescs() bulkheadDescs {
	name := []string{"name"}
	return bulkheadDescs{
		available: prometheus.NewDesc("bulkhead_available_concurrent_calls",
			"Number of free permits of the bulkhead.", name, nil),
		maxAllowed: prometheus.NewDesc("bulkhead_max_allowed_concurrent_calls",
			"Configured number of permits of the bulkhead (MaxConcurrentCalls).", name, nil),
		queued: prometheus.NewDesc("bulkhead_queued_calls",
			"Number of calls waiting for a permit.", name, nil),
		maxQueued: prometheus.NewDesc("bulkhead_max_queued_calls",
			"Configured bound of the wait queue (MaxQueuedCalls); 0 means no queue, bulkhead.Unbounded (MaxInt) no bound.", name, nil),
		calls: prometheus.NewDesc("bulkhead_calls_total",
			"Calls of the bulkhead by kind (permitted, rejected, finished, cancelled), counted since the collector was created.",
			[]string{"name", "kind"}, nil),
	}
}
