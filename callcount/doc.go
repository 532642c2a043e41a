// Package callcount counts the calls of every bulkhead of a
// bulkhead.MetricsSource (a bulkhead.Registry, the pools of a
// pool.Registry, the fleet's Registry) by bulkhead name and outcome
// (permitted, rejected, finished, cancelled), with one lock-free map lookup
// and one atomic add per event, for an exporter of your own: read
// [Counter.Counts] at scrape time. The exporters of this project
// (contrib/prometheus, contrib/otel) count the same way, with the wait and
// call-duration histograms beside.
package callcount
