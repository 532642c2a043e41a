package pool

import (
	"iter"

	"github.com/rxbulkhead/bulkhead"
)

// MetricsSource returns the registry as a bulkhead.MetricsSource, so that
// the metrics exporters (contrib/prometheus, contrib/otel) and callcount
// report its pools with the metric set of every bulkhead kind:
//   - OnEvent subscribes a listener to every pool, present and future (a
//     pool created later is subscribed before Get returns it), with the
//     events Pool.OnEvent describes;
//   - OnEvict tells of every pool evicted as idle (WithIdleTimeout);
//   - Stats is Registry.Stats, its pools counted as bulkheads;
//   - AllMetrics yields every pool, the catch-all included, in name order,
//     with a pool's workers as permits: MaxAllowedConcurrentCalls is
//     MaxWorkers, InFlightCalls ActiveWorkers, AvailableConcurrentCalls
//     the difference, QueuedCalls QueueDepth, MaxQueuedCalls
//     QueueCapacity.
//
// A removed pool (Registry.Remove) is unsubscribed. Every call returns a
// source over the same registry and listeners.
func (r *Registry) MetricsSource() bulkhead.MetricsSource { return metricsSource{r} }

type metricsSource struct{ r *Registry }

func (m metricsSource) OnEvent(f func(bulkhead.Event)) (remove func()) {
	if f == nil {
		panic("pool: MetricsSource().OnEvent called with a nil listener")
	}
	return m.r.fan.OnEvent(f)
}

func (m metricsSource) OnEvict(f func(name string)) (remove func()) {
	if f == nil {
		panic("pool: MetricsSource().OnEvict called with a nil func")
	}
	return m.r.fan.OnEvict(f)
}

func (m metricsSource) Stats() bulkhead.RegistryStats {
	st := m.r.Stats()
	return bulkhead.RegistryStats{Bulkheads: st.Pools, Evictions: st.Evictions, CatchAllCalls: st.CatchAllCalls}
}

func (m metricsSource) AllMetrics() iter.Seq2[string, bulkhead.Metrics] {
	return func(yield func(string, bulkhead.Metrics) bool) {
		for _, p := range m.r.All() {
			pm := p.Metrics()
			if !yield(p.Name(), bulkhead.Metrics{
				AvailableConcurrentCalls:  max(pm.MaxWorkers-pm.ActiveWorkers, 0),
				MaxAllowedConcurrentCalls: pm.MaxWorkers,
				InFlightCalls:             pm.ActiveWorkers,
				QueuedCalls:               pm.QueueDepth,
				MaxQueuedCalls:            pm.QueueCapacity,
			}) {
				return
			}
		}
	}
}
