package prometheus

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rxbulkhead/bulkhead/adaptive"
)

// AdaptiveCollector is a prometheus.Collector over the adaptive bulkheads
// of an adaptive.Registry. Each scrape reports, labelled with the
// bulkhead's name, from Bulkhead.Stats:
//
//	bulkhead_adaptive_limit        gauge  the limit in force
//	bulkhead_adaptive_estimate     gauge  the algorithm's last estimate,
//	                                      before floor, ceiling and smoothing
//	bulkhead_adaptive_rtt_seconds  gauge  the last window's mean RTT
//	bulkhead_adaptive_at_floor     gauge  1 while the limit sits at the
//	                                      floor (Config.Min), else 0
//	bulkhead_adaptive_floor_seconds_total
//	                               counter time the limit spent at the floor
//
// Register it next to a Collector over the same bulkhead.Registry, which
// reports the permits and the calls. Every adaptive bulkhead the registry
// has created at scrape time is reported, except one whose name is not
// valid UTF-8 (a label value Prometheus refuses), left out as the Collector
// leaves it out. It is safe for concurrent use.
type AdaptiveCollector struct {
	reg                  *adaptive.Registry
	limit, estimate, rtt *prometheus.Desc
	atFloor, floorTime   *prometheus.Desc
}

// NewAdaptiveCollector returns an AdaptiveCollector over reg. It panics if
// reg is nil.
func NewAdaptiveCollector(reg *adaptive.Registry) *AdaptiveCollector {
	if reg == nil {
		panic("bulkhead/contrib/prometheus: NewAdaptiveCollector called with a nil *adaptive.Registry")
	}
	name := []string{"name"}
	return &AdaptiveCollector{
		reg: reg,
		limit: prometheus.NewDesc("bulkhead_adaptive_limit",
			"Concurrency limit the adaptive controller applied last.", name, nil),
		estimate: prometheus.NewDesc("bulkhead_adaptive_estimate",
			"Limit the algorithm estimated last, before floor, ceiling and smoothing.", name, nil),
		rtt: prometheus.NewDesc("bulkhead_adaptive_rtt_seconds",
			"Mean round-trip time of the calls of the last window.", name, nil),
		atFloor: prometheus.NewDesc("bulkhead_adaptive_at_floor",
			"1 while the adaptive limit sits at its floor, else 0.", name, nil),
		floorTime: prometheus.NewDesc("bulkhead_adaptive_floor_seconds_total",
			"Time the adaptive limit spent at its floor.", name, nil),
	}
}

// Describe sends the descriptors of the five metrics.
func (c *AdaptiveCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.limit
	ch <- c.estimate
	ch <- c.rtt
	ch <- c.atFloor
	ch <- c.floorTime
}

// Collect reports every adaptive bulkhead, in name order, but for one whose
// name is not valid UTF-8 (see AdaptiveCollector).
func (c *AdaptiveCollector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.reg.All() {
		if !validLabel(b.Name()) {
			continue
		}
		st := b.Stats()
		ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(st.Limit), b.Name())
		ch <- prometheus.MustNewConstMetric(c.estimate, prometheus.GaugeValue, st.Estimate, b.Name())
		ch <- prometheus.MustNewConstMetric(c.rtt, prometheus.GaugeValue, st.RTT.Seconds(), b.Name())
		atFloor := 0.0
		if st.AtFloor {
			atFloor = 1
		}
		ch <- prometheus.MustNewConstMetric(c.atFloor, prometheus.GaugeValue, atFloor, b.Name())
		ch <- prometheus.MustNewConstMetric(c.floorTime, prometheus.CounterValue, st.FloorTime.Seconds(), b.Name())
	}
}

var _ prometheus.Collector = (*AdaptiveCollector)(nil)
