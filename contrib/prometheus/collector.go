package prometheus

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/callcount"
	"github.com/rxbulkhead/bulkhead/internal/waitstats"
)

// Collector is a prometheus.Collector over the bulkheads of a
// bulkhead.Registry. Each scrape reports, labelled with the bulkhead's name:
//
//	bulkhead_available_concurrent_calls    gauge   free permits
//	bulkhead_max_allowed_concurrent_calls  gauge   configured permits
//	bulkhead_queued_calls                  gauge   calls waiting for a permit
//	bulkhead_max_queued_calls              gauge   queue bound (0: no queue; bulkhead.Unbounded)
//	bulkhead_calls_total{kind}             counter events, kind = permitted,
//	                                               rejected, finished or cancelled
//	bulkhead_wait_duration_seconds{outcome} histogram time calls waited for a
//	                                               permit (Event.Wait), outcome =
//	                                               granted or rejected
//	bulkhead_rejected_calls_total{reason}  counter rejections, reason = no_wait,
//	                                               queue_full, wait_timeout or evicted
//	bulkhead_shadowed_calls_total{reason}  counter calls let through in shadow mode
//	                                               (bulkhead.Config.ShadowMode), reason =
//	                                               would_wait, no_wait, queue_full or
//	                                               evicted; only for a bulkhead in shadow
//	                                               mode or that has been
//
// and with WithResilience4jNames the two gauges again as
// resilience4j_bulkhead_available_concurrent_calls and
// resilience4j_bulkhead_max_allowed_concurrent_calls (label name).
//
// The wait histogram counts every permitted call (a permit granted at
// once falls in the first bucket, with a wait of zero) and every rejected
// one (NoWait and QueueFull with a wait of zero), so its count is the
// number of permitted, respectively rejected, calls; its buckets are
// DefaultWaitBuckets unless WithWaitBuckets says otherwise. The adaptive
// bulkheads of an adaptive.Registry are Semaphores of a bulkhead.Registry:
// a Collector over that registry reports them with these metrics, beside
// the AdaptiveCollector's. WithPools adds the pools of a pool.Registry
// under the same names (NewPoolCollector, for pools alone).
//
// and, for the registry as a whole (no label):
//
//	bulkhead_registry_bulkheads              gauge   live bulkheads, the catch-all included
//	bulkhead_registry_evictions_total        counter bulkheads evicted as idle (WithIdleTimeout)
//	bulkhead_registry_catch_all_calls_total  counter keyed calls sent to the catch-all (WithMaxBulkheads)
//
// Every bulkhead the registry holds at scrape time is reported, including
// those created after the Collector. Gauges are read from
// Semaphore.Metrics at scrape time. Counters come from a
// callcount.Counter: a bulkhead that exists when NewCollector is called
// is counted from then on, and one created later from its creation, so no
// event is lost before its first scrape. A bulkhead removed from the
// registry disappears from the next scrape and is no longer counted; one
// created again under its name continues its counters, which therefore
// never go down. A bulkhead evicted as idle (bulkhead.WithIdleTimeout)
// disappears from the next scrape and its counts are forgotten, so that
// the series of a million passing keys do not stay: one created again
// under its name counts from zero, which Prometheus reads as a new series
// (rate and increase handle it as a counter reset).
//
// A Collector is safe for concurrent use. Counting turns event publication
// on for every bulkhead of the registry: each event then costs the goroutine
// that causes it a clock read and the counter's listener (a lock-free map
// lookup by name and one atomic add); BenchmarkTryAcquireFinishCall
// measures it.
type Collector struct {
	reg     *bulkhead.Registry
	counter *callcount.Counter
	closed  atomic.Bool

	waits                  *waitstats.Table // fed by the listener removed by stopWaits
	stopWaits, forgetWaits func()
	waitDescs

	bulkheadDescs                       // per bulkhead, shared with PoolCollector
	bulkheads, evictions, catchAllCalls *prometheus.Desc
	pools                               *poolSource // WithPools, or nil
}

// NewCollector returns a Collector over reg and starts counting the events
// of its bulkheads, present and future. Register it with a
// prometheus.Registerer; call Close when it is no longer used. It panics if
// reg or an option is nil, or if WithWaitBuckets is given bad bounds.
func NewCollector(reg *bulkhead.Registry, opts ...Option) *Collector {
	if reg == nil {
		panic("bulkhead/contrib/prometheus: NewCollector called with a nil *bulkhead.Registry")
	}
	o := newOptions("NewCollector", opts)
	waits := waitstats.New(o.buckets)
	return &Collector{
		reg:           reg,
		waits:         waits,
		stopWaits:     reg.OnEvent(waits.Record),
		forgetWaits:   reg.OnEvict(waits.Forget),
		waitDescs:     newWaitDescs(o),
		pools:         newPoolSourceIf(o),
		counter:       callcount.New(reg),
		bulkheadDescs: newBulkheadDescs(),
		bulkheads: prometheus.NewDesc("bulkhead_registry_bulkheads",
			"Number of live bulkheads of the registry, the catch-all included.", nil, nil),
		evictions: prometheus.NewDesc("bulkhead_registry_evictions_total",
			"Number of bulkheads the registry evicted as idle.", nil, nil),
		catchAllCalls: prometheus.NewDesc("bulkhead_registry_catch_all_calls_total",
			"Number of keyed calls the registry sent to its catch-all bulkhead because it held its maximum number of bulkheads.", nil, nil),
	}
}

// Describe sends the descriptors of the metrics.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.waitDescs.describe(ch)
	ch <- c.bulkheads
	ch <- c.evictions
	ch <- c.catchAllCalls
	ch <- c.available
	ch <- c.maxAllowed
	ch <- c.queued
	ch <- c.maxQueued
	ch <- c.calls
}

// Collect reports every bulkhead the registry holds, in name order. After
// Close it reports the gauges only.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	closed := c.closed.Load()
	st := c.reg.Stats()
	ch <- prometheus.MustNewConstMetric(c.bulkheads, prometheus.GaugeValue, float64(st.Bulkheads))
	ch <- prometheus.MustNewConstMetric(c.evictions, prometheus.CounterValue, float64(st.Evictions))
	ch <- prometheus.MustNewConstMetric(c.catchAllCalls, prometheus.CounterValue, float64(st.CatchAllCalls))
	sems := c.reg.All()
	for _, s := range sems {
		name := s.Name()
		m := s.Metrics()
		ch <- prometheus.MustNewConstMetric(c.available, prometheus.GaugeValue, float64(m.AvailableConcurrentCalls), name)
		ch <- prometheus.MustNewConstMetric(c.maxAllowed, prometheus.GaugeValue, float64(m.MaxAllowedConcurrentCalls), name)
		ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(m.QueuedCalls), name)
		ch <- prometheus.MustNewConstMetric(c.maxQueued, prometheus.GaugeValue, float64(m.MaxQueuedCalls), name)
		c.collectGauges(ch, name, m.AvailableConcurrentCalls, m.MaxAllowedConcurrentCalls)
		if closed {
			continue
		}
		c.collectWaits(ch, name, c.waits.Get(name), s.Config().ShadowMode)
		n := c.counter.Counts(name)
		ch <- prometheus.MustNewConstMetric(c.calls, prometheus.CounterValue, float64(n.Permitted), name, bulkhead.CallPermitted.String())
		ch <- prometheus.MustNewConstMetric(c.calls, prometheus.CounterValue, float64(n.Rejected), name, bulkhead.CallRejected.String())
		ch <- prometheus.MustNewConstMetric(c.calls, prometheus.CounterValue, float64(n.Finished), name, bulkhead.CallFinished.String())
		ch <- prometheus.MustNewConstMetric(c.calls, prometheus.CounterValue, float64(n.Cancelled), name, bulkhead.CallCancelled.String())
	}
	if c.pools != nil {
		c.pools.collect(ch, &c.bulkheadDescs, &c.waitDescs, semaphoreNamed(sems))
	}
}

// semaphoreNamed reports whether one of sems has the given name.
func semaphoreNamed(sems []*bulkhead.Semaphore) func(string) bool {
	names := make(map[string]struct{}, len(sems))
	for _, s := range sems {
		names[s.Name()] = struct{}{}
	}
	return func(n string) bool { _, ok := names[n]; return ok }
}

// Close stops counting events (see callcount.Counter.Close). Call it
// after unregistering the Collector; later scrapes report the gauges only.
// Close is idempotent.
func (c *Collector) Close() {
	c.closed.Store(true)
	c.counter.Close()
	c.stopWaits()
	c.forgetWaits()
	if c.pools != nil {
		c.pools.close()
	}
}

var _ prometheus.Collector = (*Collector)(nil)
