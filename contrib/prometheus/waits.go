package prometheus

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/waitstats"
)

// waitDescs are the descriptors every collector of this package shares for
// the waits and rejections, so that a Semaphore and a Pool export the same
// names, labels and help.
type waitDescs struct {
	wait, rejections, shadowed *prometheus.Desc
	// resilience4j's names of the two gauges (nil without WithResilience4jNames)
	r4jAvailable, r4jMaxAllowed *prometheus.Desc
	bounds                      []float64 // the bucket bounds in seconds
}

func newWaitDescs(o options) waitDescs {
	d := waitDescs{
		wait: prometheus.NewDesc("bulkhead_wait_duration_seconds",
			"Time calls waited for a permit, by outcome: granted (zero for a permit granted at once) or rejected (zero for a rejection without waiting).",
			[]string{"name", "outcome"}, nil),
		rejections: prometheus.NewDesc("bulkhead_rejected_calls_total",
			"Calls rejected, by reason: no_wait, queue_full, wait_timeout, evicted.",
			[]string{"name", "reason"}, nil),
		shadowed: prometheus.NewDesc("bulkhead_shadowed_calls_total",
			"Calls a bulkhead in shadow mode let through that it would have queued (would_wait) or rejected (no_wait, queue_full, evicted).",
			[]string{"name", "reason"}, nil),
	}
	if o.resilience4j {
		d.r4jAvailable = prometheus.NewDesc("resilience4j_bulkhead_available_concurrent_calls",
			"The number of available permissions", []string{"name"}, nil)
		d.r4jMaxAllowed = prometheus.NewDesc("resilience4j_bulkhead_max_allowed_concurrent_calls",
			"The maximum number of available permissions", []string{"name"}, nil)
	}
	for _, b := range o.buckets {
		d.bounds = append(d.bounds, b.Seconds())
	}
	return d
}

func (d *waitDescs) describe(ch chan<- *prometheus.Desc) {
	ch <- d.wait
	ch <- d.rejections
	ch <- d.shadowed
	if d.r4jAvailable != nil {
		ch <- d.r4jAvailable
		ch <- d.r4jMaxAllowed
	}
}

// collectGauges sends resilience4j's gauges, if enabled.
func (d *waitDescs) collectGauges(ch chan<- prometheus.Metric, name string, available, maxAllowed int) {
	if d.r4jAvailable == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(d.r4jAvailable, prometheus.GaugeValue, float64(available), name)
	ch <- prometheus.MustNewConstMetric(d.r4jMaxAllowed, prometheus.GaugeValue, float64(maxAllowed), name)
}

// collectWaits sends the two wait histograms and the rejection counters of
// name from s (all zero if s is nil: the bulkhead published no event yet),
// and the shadow counters if shadow is set or one of them is not zero (a
// bulkhead in shadow mode, or one that was: the series are not exported
// for the bulkheads that never used it).
func (d *waitDescs) collectWaits(ch chan<- prometheus.Metric, name string, s *waitstats.Stats, shadow bool) {
	var zero waitstats.Stats
	if s == nil {
		s = &zero
	}
	ch <- d.histogram(&s.Granted, name, "granted")
	ch <- d.histogram(&s.Rejected, name, "rejected")
	for i, r := range waitstats.Reasons {
		ch <- prometheus.MustNewConstMetric(d.rejections, prometheus.CounterValue, float64(s.Rejections[i].Load()), name, waitstats.ReasonLabel(r))
	}
	var counts [len(s.Shadowed)]uint64
	for i := range s.Shadowed {
		counts[i] = s.Shadowed[i].Load()
		shadow = shadow || counts[i] > 0
	}
	if !shadow {
		return
	}
	for i, n := range counts {
		if i == int(bulkhead.WaitTimeout) { // index 1+reason-1
			continue // shadow mode never reports a wait timeout
		}
		ch <- prometheus.MustNewConstMetric(d.shadowed, prometheus.CounterValue, float64(n), name, waitstats.ShadowLabel(i))
	}
}

func (d *waitDescs) histogram(h *waitstats.Histogram, name, outcome string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(d.bounds))
	count, sum, cumulative := h.Snapshot()
	for i, b := range d.bounds {
		buckets[b] = 0
		if i < len(cumulative) {
			buckets[b] = cumulative[i]
		}
	}
	return prometheus.MustNewConstHistogram(d.wait, count, sum.Seconds(), buckets, name, outcome)
}
