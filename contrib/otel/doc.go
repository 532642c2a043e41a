// Package otel exports bulkheads as OpenTelemetry metrics: Start observes
// any bulkhead.MetricsSource (a bulkhead.Registry, the pools of a
// pool.Registry, the fleet's Registry of contrib/redis) with one set of
// instruments for every kind: observable gauges of the permits and the
// queue, observable counters of the calls by kind and of the rejections by
// reason, and histograms of the waits and of the call durations, with the
// bulkhead's name as the "name" attribute. StartAdaptive adds the adaptive
// limits, StartBudgets the hub budgets (bulkhead.Budget): permits and
// queues per class and group, calls, permits granted, rejections and waits
// per class. It lives in its own module so that the core module does not
// depend on OpenTelemetry.
package otel
