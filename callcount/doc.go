// Package callcount counts the calls of every bulkhead of a
// bulkhead.Registry by bulkhead name and outcome (permitted, rejected,
// finished, cancelled), with one lock-free map lookup and one atomic add per
// event. It is the event source of the metrics exporters
// (contrib/prometheus, contrib/otel) and of any other exporter: read
// [Counter.Counts] at scrape time.
package callcount
