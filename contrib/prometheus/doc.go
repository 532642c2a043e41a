// Package prometheus exports the state of a bulkhead.Registry to Prometheus:
// NewCollector returns a prometheus.Collector with one gauge per Metrics
// field and a calls counter per event kind, labelled with the bulkhead's
// name. The counters come from a callcount.Counter, so a bulkhead created
// after the Collector is counted from its first call. It lives in its own
// module so that the core module does not depend on client_golang.
package prometheus
