package prometheus

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/callstats"
)

// descs are the descriptors of a Collector: one name, label set and help
// per metric, whatever the kind of bulkhead, so that every kind shares a
// dashboard.
type descs struct {
	available, maxAllowed, queued, maxQueued, calls *prometheus.Desc
	wait, duration, rejections, shadowed            *prometheus.Desc
	bulkheads, evictions, catchAllCalls             *prometheus.Desc
	// resilience4j's names of the two gauges (nil without WithResilience4jNames)
	r4jAvailable, r4jMaxAllowed *prometheus.Desc
	// the bucket bounds in seconds
	waitBounds, durationBounds []float64
}

func newDescs(o options) descs {
	name := []string{"name"}
	d := descs{
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
		wait: prometheus.NewDesc("bulkhead_wait_duration_seconds",
			"Time calls waited for a permit, by outcome: granted (zero for a permit granted at once) or rejected (zero for a rejection without waiting).",
			[]string{"name", "outcome"}, nil),
		duration: prometheus.NewDesc("bulkhead_call_duration_seconds",
			"Time calls held their permit, from the grant to the finish, for the calls whose finish knew their start.",
			name, nil),
		rejections: prometheus.NewDesc("bulkhead_rejected_calls_total",
			"Calls rejected, by reason: no_wait, queue_full, wait_timeout, evicted, unavailable.",
			[]string{"name", "reason"}, nil),
		shadowed: prometheus.NewDesc("bulkhead_shadowed_calls_total",
			"Calls a bulkhead in shadow mode let through that it would have queued (would_wait) or rejected (no_wait, queue_full, evicted).",
			[]string{"name", "reason"}, nil),
		bulkheads: prometheus.NewDesc("bulkhead_registry_bulkheads",
			"Number of live bulkheads of the registry, the catch-all included.", nil, nil),
		evictions: prometheus.NewDesc("bulkhead_registry_evictions_total",
			"Number of bulkheads the registry evicted as idle.", nil, nil),
		catchAllCalls: prometheus.NewDesc("bulkhead_registry_catch_all_calls_total",
			"Number of keyed calls the registry sent to its catch-all bulkhead because it held its maximum number of bulkheads.", nil, nil),
	}
	if o.resilience4j {
		d.r4jAvailable = prometheus.NewDesc("resilience4j_bulkhead_available_concurrent_calls",
			"The number of available permissions", name, nil)
		d.r4jMaxAllowed = prometheus.NewDesc("resilience4j_bulkhead_max_allowed_concurrent_calls",
			"The maximum number of available permissions", name, nil)
	}
	for _, b := range o.waitBuckets {
		d.waitBounds = append(d.waitBounds, b.Seconds())
	}
	for _, b := range o.durationBuckets {
		d.durationBounds = append(d.durationBounds, b.Seconds())
	}
	return d
}

func (d *descs) describe(ch chan<- *prometheus.Desc) {
	for _, desc := range []*prometheus.Desc{d.bulkheads, d.evictions, d.catchAllCalls,
		d.available, d.maxAllowed, d.queued, d.maxQueued, d.calls,
		d.wait, d.duration, d.rejections, d.shadowed} {
		ch <- desc
	}
	if d.r4jAvailable != nil {
		ch <- d.r4jAvailable
		ch <- d.r4jMaxAllowed
	}
}

// collectRegistry sends the registry-wide metrics.
func (d *descs) collectRegistry(ch chan<- prometheus.Metric, st bulkhead.RegistryStats) {
	ch <- prometheus.MustNewConstMetric(d.bulkheads, prometheus.GaugeValue, float64(st.Bulkheads))
	ch <- prometheus.MustNewConstMetric(d.evictions, prometheus.CounterValue, float64(st.Evictions))
	ch <- prometheus.MustNewConstMetric(d.catchAllCalls, prometheus.CounterValue, float64(st.CatchAllCalls))
}

// collectGauges sends the gauges of the bulkhead name, and resilience4j's
// if enabled.
func (d *descs) collectGauges(ch chan<- prometheus.Metric, name string, m bulkhead.Metrics) {
	ch <- prometheus.MustNewConstMetric(d.available, prometheus.GaugeValue, float64(m.AvailableConcurrentCalls), name)
	ch <- prometheus.MustNewConstMetric(d.maxAllowed, prometheus.GaugeValue, float64(m.MaxAllowedConcurrentCalls), name)
	ch <- prometheus.MustNewConstMetric(d.queued, prometheus.GaugeValue, float64(m.QueuedCalls), name)
	ch <- prometheus.MustNewConstMetric(d.maxQueued, prometheus.GaugeValue, float64(m.MaxQueuedCalls), name)
	if d.r4jAvailable != nil {
		ch <- prometheus.MustNewConstMetric(d.r4jAvailable, prometheus.GaugeValue, float64(m.AvailableConcurrentCalls), name)
		ch <- prometheus.MustNewConstMetric(d.r4jMaxAllowed, prometheus.GaugeValue, float64(m.MaxAllowedConcurrentCalls), name)
	}
}

// collectCalls sends the counters and histograms of name from s (all zero
// if s is nil: the bulkhead published no event yet), and the shadow
// counters if shadow is set (the bulkhead is in shadow mode) or one of them
// is not zero (it was): the series are not exported for the bulkheads that
// never used shadow mode.
func (d *descs) collectCalls(ch chan<- prometheus.Metric, name string, s *callstats.Stats, shadow bool) {
	var zero callstats.Stats
	if s == nil {
		s = &zero
	}
	for _, k := range callstats.Kinds {
		ch <- prometheus.MustNewConstMetric(d.calls, prometheus.CounterValue, float64(s.Count(k)), name, k.String())
	}
	ch <- histogram(d.wait, d.waitBounds, &s.Granted, name, "granted")
	ch <- histogram(d.wait, d.waitBounds, &s.Rejected, name, "rejected")
	ch <- histogram(d.duration, d.durationBounds, &s.Duration, name)
	for i, r := range callstats.Reasons {
		ch <- prometheus.MustNewConstMetric(d.rejections, prometheus.CounterValue, float64(s.Rejections[i].Load()), name, callstats.ReasonLabel(r))
	}
	counts, export := s.ShadowCounts(shadow)
	if !export {
		return
	}
	for i, n := range counts {
		ch <- prometheus.MustNewConstMetric(d.shadowed, prometheus.CounterValue, float64(n), name, callstats.ShadowLabel(i))
	}
}

func histogram(desc *prometheus.Desc, bounds []float64, h *callstats.Histogram, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(bounds))
	count, sum, cumulative := h.Snapshot()
	for i, b := range bounds {
		buckets[b] = 0
		if i < len(cumulative) {
			buckets[b] = cumulative[i]
		}
	}
	return prometheus.MustNewConstHistogram(desc, count, sum.Seconds(), buckets, labels...)
}
