package prometheus

import (
	"sync/atomic"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/callstats"
)

// Collector is a prometheus.Collector over the bulkheads of one or more
// bulkhead.MetricsSources: a *bulkhead.Registry of Semaphores (adaptive
// ones included), the pools of a pool.Registry (WithPools), the fleet's
// Registry of contrib/redis (WithSources), each kind with the same metric
// set. Each scrape reports, labelled with the bulkhead's name:
//
//	bulkhead_available_concurrent_calls     gauge     free permits
//	bulkhead_max_allowed_concurrent_calls   gauge     configured permits
//	bulkhead_queued_calls                   gauge     calls waiting for a permit
//	bulkhead_max_queued_calls               gauge     queue bound (0: no queue; bulkhead.Unbounded)
//	bulkhead_calls_total{kind}              counter   events, kind = permitted,
//	                                                  rejected, finished or cancelled
//	bulkhead_wait_duration_seconds{outcome} histogram time calls waited for a
//	                                                  permit (Event.Wait), outcome =
//	                                                  granted or rejected
//	bulkhead_call_duration_seconds          histogram time calls held their permit,
//	                                                  grant to finish (Event.CallDuration)
//	bulkhead_rejected_calls_total{reason}   counter   rejections, reason = no_wait,
//	                                                  queue_full, wait_timeout, evicted or
//	                                                  unavailable (bulkhead.Unavailable: a
//	                                                  fleet bulkhead's store away or refusing)
//	bulkhead_shadowed_calls_total{reason}   counter   calls let through in shadow mode
//	                                                  (bulkhead.Config.ShadowMode), reason =
//	                                                  would_wait, no_wait, queue_full or
//	                                                  evicted; only for a bulkhead in
//	                                                  shadow mode or that has been
//
// and with WithResilience4jNames the two gauges again as
// resilience4j_bulkhead_available_concurrent_calls and
// resilience4j_bulkhead_max_allowed_concurrent_calls (label name); and,
// for the sources as a whole (no label; the sums over the sources):
//
//	bulkhead_registry_bulkheads              gauge   live bulkheads, the catch-all included
//	bulkhead_registry_evictions_total        counter bulkheads evicted as idle (WithIdleTimeout)
//	bulkhead_registry_catch_all_calls_total  counter keyed calls sent to the catch-all (WithMaxBulkheads)
//
// The wait histogram counts every permitted call (a permit granted at
// once falls in the first bucket, with a wait of zero) and every rejected
// one (NoWait and QueueFull with a wait of zero, except for a fleet
// bulkhead, whose calls all wait for their round trip to Redis), so its
// count is the number of permitted, respectively rejected, calls. The
// call-duration histogram counts the finished calls whose finish knew
// their start: all of a pool's tasks, a Semaphore's calls given back
// through a Lease, FinishCallStarted, the reactive operators, iterate or
// an adaptive Call, and a fleet bulkhead's given back through
// Permit.Finish (a bare FinishCall does not say which call finished; see
// bulkhead.Event.CallDuration). Their buckets are DefaultWaitBuckets and
// DefaultCallDurationBuckets unless WithWaitBuckets or
// WithCallDurationBuckets say otherwise. The adaptive bulkheads of an
// adaptive.Registry are Semaphores of a bulkhead.Registry: a Collector
// over that registry reports them with these metrics, beside the
// AdaptiveCollector's.
//
// Every bulkhead a source holds at scrape time is reported (its
// AllMetrics), including those created after the Collector, except one
// whose name is not valid UTF-8, which Prometheus refuses as a label value
// (a key taken from a peer's request, say): it is left out of the scrape,
// which goes on with the others, and counts only in
// bulkhead_registry_bulkheads. Gauges are read
// at scrape time. Counters and histograms come from the events (the
// source's OnEvent): a bulkhead that exists when NewCollector is called is
// counted from then on, and one created later from its creation, so no
// event is lost before its first scrape. A bulkhead removed from a
// bulkhead.Registry disappears from the next scrape and is no longer
// counted; one created again under its name continues its counters, which
// therefore never go down. A bulkhead evicted as idle (OnEvict:
// bulkhead.WithIdleTimeout, pool.WithIdleTimeout) disappears from the next
// scrape and its counts are forgotten, so that the series of a million
// passing keys do not stay: one created again under its name counts from
// zero, which Prometheus reads as a new series (rate and increase handle it
// as a counter reset).
//
// A Collector is safe for concurrent use. Counting turns event publication
// on for every bulkhead of its sources: each event then costs the goroutine
// that causes it a clock read and the Collector's listener (a lock-free map
// lookup by name, an atomic add, and for a grant, rejection or timed finish
// a histogram's binary search and two atomic adds);
// BenchmarkTryAcquireFinishCall measures it.
type Collector struct {
	watches []*callstats.Watch // the source of NewCollector, then WithSources'
	closed  atomic.Bool
	descs
}

// NewCollector returns a Collector over src (and the sources of
// WithSources and WithPools) and starts counting the events of their
// bulkheads, present and future. A *bulkhead.Registry is a MetricsSource;
// so are pool.Registry.MetricsSource() and the fleet's Registry. Register
// the Collector with a prometheus.Registerer; call Close when it is no
// longer used. It panics if src or an option is nil (the message names the
// option's index in opts), or if a bucket option is given bad bounds.
func NewCollector(src bulkhead.MetricsSource, opts ...Option) *Collector {
	if isNil(src) {
		panic("bulkhead/contrib/prometheus: NewCollector called with a nil bulkhead.MetricsSource")
	}
	o := newOptions("NewCollector", opts)
	c := &Collector{descs: newDescs(o)}
	for _, s := range callstats.Distinct(append([]bulkhead.MetricsSource{src}, o.sources...)) {
		c.watches = append(c.watches, callstats.NewWatch(s, o.waitBuckets, o.durationBuckets, callstats.Hooks{}))
	}
	return c
}

// Describe sends the descriptors of the metrics.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { c.describe(ch) }

// Collect reports every bulkhead of the sources, source after source, each
// in name order, but for a bulkhead whose name is not valid UTF-8 (see
// Collector). After Close it reports the gauges only.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	closed := c.closed.Load()
	c.collectRegistry(ch, callstats.SumStats(c.watches))
	callstats.Each(c.watches, func(w *callstats.Watch, name string, m bulkhead.Metrics) {
		if !validLabel(name) {
			return
		}
		c.collectGauges(ch, name, m)
		if !closed {
			c.collectCalls(ch, name, w.Get(name), m.ShadowMode)
		}
	})
}

// Close stops counting events. Call it after unregistering the Collector;
// later scrapes report the gauges only. Close is idempotent.
func (c *Collector) Close() {
	c.closed.Store(true)
	for _, w := range c.watches {
		w.Close()
	}
}

var _ prometheus.Collector = (*Collector)(nil)

// validLabel reports whether s may be a label value: client_golang refuses
// a value that is not valid UTF-8, and MustNewConstMetric would panic in
// the middle of the scrape, failing it for every bulkhead after s.
func validLabel(s string) bool { return utf8.ValidString(s) }
