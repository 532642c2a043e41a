// Package prometheus exports bulkheads to Prometheus: NewCollector returns
// a prometheus.Collector over any bulkhead.MetricsSource (a
// bulkhead.Registry, the pools of a pool.Registry, the fleet's Registry of
// contrib/redis) with one metric set for every kind: gauges of the permits
// and the queue, counters of the calls by kind and of the rejections by
// reason, and histograms of the waits and of the call durations, labelled
// with the bulkhead's name. NewAdaptiveCollector adds the adaptive limits,
// NewBudgetCollector the hub budgets (bulkhead.Budget): permits and queues
// per class and group, calls, permits granted, rejections and waits per
// class. It lives in its own module so that the core module does not
// depend on client_golang.
package prometheus
