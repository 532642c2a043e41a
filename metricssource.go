package bulkhead

import "iter"

// MetricsSource is a set of bulkheads as the metrics exporters
// (contrib/prometheus, contrib/otel) and callcount see it, whatever their
// kind: a *Registry of Semaphores, a pool.Registry (its MetricsSource
// method), the fleet's Registry (contrib/redis). The exporters build every
// series from these four methods, so every kind exports the same metric
// set under the same names and labels.
type MetricsSource interface {
	// OnEvent registers f on every bulkhead of the set, present and
	// future, and returns a func that unregisters it everywhere
	// (idempotent). A bulkhead created later is subscribed before anyone
	// can use it, so f misses none of its events.
	OnEvent(f func(Event)) (remove func())
	// OnEvict registers f to be called with the name of every bulkhead the
	// set drops as idle, so that its series are forgotten (a bulkhead
	// created again under the name starts from zero), and returns a func
	// that unregisters it (idempotent).
	OnEvict(f func(name string)) (remove func())
	// Stats returns the set's counts.
	Stats() RegistryStats
	// AllMetrics yields the name and a snapshot of every live bulkhead, in
	// name order.
	AllMetrics() iter.Seq2[string, Metrics]
}

var _ MetricsSource = (*Registry)(nil)

// AllMetrics yields the name and Metrics of every bulkhead of the
// registry, the catch-all included, in name order, for the metrics
// exporters (MetricsSource). The set is the one of the moment the
// iteration starts; each Metrics is read when it is yielded. It does not
// pin the bulkheads.
func (r *Registry) AllMetrics() iter.Seq2[string, Metrics] {
	return func(yield func(string, Metrics) bool) {
		for _, s := range r.cat.All() {
			if !yield(s.Name(), s.Metrics()) {
				return
			}
		}
	}
}
