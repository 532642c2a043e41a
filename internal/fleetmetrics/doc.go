// Package fleetmetrics holds no code: its tests run the fleet bulkhead of
// contrib/redis, against a redis-server they start, through both metrics
// exporters, and check that it exports the metric set of every bulkhead
// kind under the same names and labels: scraped by the contrib/prometheus
// Collector and by a real Prometheus (PromQL), and read through the
// OpenTelemetry SDK's in-memory reader (contrib/otel).
package fleetmetrics
