package prometheus

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/waitstats"
	"github.com/rxbulkhead/bulkhead/pool"
)

// WithPools makes a Collector also report the pools of preg, under the
// same names and labels as its Semaphores (see PoolCollector for what a
// pool's series mean). A pool named like a Semaphore of the Collector's
// registry is left out of the scrape (two series cannot share a name and
// labels): name them apart. NewCollector panics if preg is nil.
func WithPools(preg *pool.Registry) Option {
	return optionFunc(func(o *options) {
		if preg == nil {
			panic("bulkhead/contrib/prometheus: WithPools called with a nil *pool.Registry")
		}
		o.pools = preg
	})
}

// PoolCollector is a prometheus.Collector over the pools of a
// pool.Registry. It exports the metrics of a Collector, with the same
// names, labels and help, so that a dashboard shows Semaphores and pools
// alike; for a pool:
//
//	bulkhead_available_concurrent_calls    MaxWorkers - ActiveWorkers
//	bulkhead_max_allowed_concurrent_calls  MaxWorkers
//	bulkhead_queued_calls                  QueueDepth
//	bulkhead_max_queued_calls              QueueCapacity
//	bulkhead_calls_total{kind}             the pool's events (permitted: a
//	                                       worker started a task; finished:
//	                                       it returned; cancelled: a queued
//	                                       task withdrawn)
//	bulkhead_wait_duration_seconds{outcome} time tasks spent queued
//	bulkhead_rejected_calls_total{reason}  no_wait, queue_full, wait_timeout
//
// and the resilience4j gauges with WithResilience4jNames. To serve pools
// and Semaphores from one prometheus.Registry, give the Collector
// WithPools instead (two collectors cannot register the same
// descriptors).
//
// A pool.Registry publishes no events of its own, so the collector
// subscribes to each pool (Pool.OnEvent) when it first sees it: the pools
// the registry holds at NewPoolCollector, then those it finds at each
// scrape. A pool created after NewPoolCollector is therefore counted from
// the first scrape that reports it; its earlier calls are not. A pool
// removed from the registry is unsubscribed and forgotten at the next
// scrape; one created again under its name counts from zero (a counter
// reset). It is safe for concurrent use; call Close when done.
type PoolCollector struct {
	src *poolSource
	bulkheadDescs
	waitDescs
}

// NewPoolCollector returns a PoolCollector over preg (options as for
// NewCollector; WithPools is refused). It panics if preg is nil.
func NewPoolCollector(preg *pool.Registry, opts ...Option) *PoolCollector {
	if preg == nil {
		panic("bulkhead/contrib/prometheus: NewPoolCollector called with a nil *pool.Registry")
	}
	o := newOptions("NewPoolCollector", opts)
	if o.pools != nil {
		panic("bulkhead/contrib/prometheus: NewPoolCollector called with WithPools (an option of NewCollector)")
	}
	return &PoolCollector{src: newPoolSource(preg, o), bulkheadDescs: newBulkheadDescs(), waitDescs: newWaitDescs(o)}
}

// Describe sends the descriptors of the metrics.
func (c *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	c.bulkheadDescs.describe(ch)
	c.waitDescs.describe(ch)
}

// Collect reports every pool of the registry, in name order.
func (c *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	c.src.collect(ch, &c.bulkheadDescs, &c.waitDescs, nil)
}

// Close unsubscribes from every pool; later scrapes report the gauges
// only. Close is idempotent.
func (c *PoolCollector) Close() { c.src.close() }

func (d *bulkheadDescs) describe(ch chan<- *prometheus.Desc) {
	ch <- d.available
	ch <- d.maxAllowed
	ch <- d.queued
	ch <- d.maxQueued
	ch <- d.calls
}

// poolSource follows the pools of a pool.Registry: it subscribes a
// listener to each pool it sees (sync) and keeps their wait statistics and
// event counts by name. The listener runs on whichever goroutine publishes
// a pool's event (see pool.Pool.OnEvent) and takes no lock.
type poolSource struct {
	reg    *pool.Registry
	waits  *waitstats.Table
	counts sync.Map // pool name -> *[4]atomic.Uint64, by EventType-1

	mu     sync.Mutex         // guards subs and closed
	subs   map[string]poolSub // the pools subscribed, by name
	closed bool
}

type poolSub struct {
	p      *pool.Pool
	remove func()
}

// newPoolSourceIf returns the source of WithPools, or nil without it.
func newPoolSourceIf(o options) *poolSource {
	if o.pools == nil {
		return nil
	}
	return newPoolSource(o.pools, o)
}

func newPoolSource(reg *pool.Registry, o options) *poolSource {
	s := &poolSource{reg: reg, waits: waitstats.New(o.buckets), subs: map[string]poolSub{}}
	s.sync()
	return s
}

func (s *poolSource) record(e bulkhead.Event) {
	s.waits.Record(e)
	i := uint(e.Type) - 1
	if i >= 4 {
		return
	}
	v, ok := s.counts.Load(e.Name)
	if !ok {
		v, _ = s.counts.LoadOrStore(e.Name, new([4]atomic.Uint64))
	}
	v.(*[4]atomic.Uint64)[i].Add(1)
}

// sync subscribes to the pools of the registry not yet subscribed, drops
// those no longer in it (or replaced under their name), and returns the
// registry's pools.
func (s *poolSource) sync() []*pool.Pool {
	all := s.reg.All()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return all
	}
	seen := make(map[string]bool, len(all))
	for _, p := range all {
		seen[p.Name()] = true
		if sub, ok := s.subs[p.Name()]; ok && sub.p == p {
			continue
		} else if ok {
			s.forgetLocked(p.Name(), sub)
		}
		s.subs[p.Name()] = poolSub{p: p, remove: p.OnEvent(s.record)}
	}
	for name, sub := range s.subs {
		if !seen[name] {
			s.forgetLocked(name, sub)
			delete(s.subs, name)
		}
	}
	return all
}

func (s *poolSource) forgetLocked(name string, sub poolSub) {
	sub.remove()
	s.waits.Forget(name)
	s.counts.Delete(name)
}

func (s *poolSource) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, sub := range s.subs {
		sub.remove()
	}
	s.subs = map[string]poolSub{}
}

// collect reports every pool, skipping those whose name skip reports.
func (s *poolSource) collect(ch chan<- prometheus.Metric, b *bulkheadDescs, w *waitDescs, skip func(string) bool) {
	all := s.sync()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	for _, p := range all {
		name := p.Name()
		if skip != nil && skip(name) {
			continue
		}
		m := p.Metrics()
		available := max(m.MaxWorkers-m.ActiveWorkers, 0)
		ch <- prometheus.MustNewConstMetric(b.available, prometheus.GaugeValue, float64(available), name)
		ch <- prometheus.MustNewConstMetric(b.maxAllowed, prometheus.GaugeValue, float64(m.MaxWorkers), name)
		ch <- prometheus.MustNewConstMetric(b.queued, prometheus.GaugeValue, float64(m.QueueDepth), name)
		ch <- prometheus.MustNewConstMetric(b.maxQueued, prometheus.GaugeValue, float64(m.QueueCapacity), name)
		w.collectGauges(ch, name, available, m.MaxWorkers)
		if closed {
			continue
		}
		var n [4]uint64
		if v, ok := s.counts.Load(name); ok {
			for i := range n {
				n[i] = v.(*[4]atomic.Uint64)[i].Load()
			}
		}
		for i, t := range []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallRejected, bulkhead.CallFinished, bulkhead.CallCancelled} {
			ch <- prometheus.MustNewConstMetric(b.calls, prometheus.CounterValue, float64(n[i]), name, t.String())
		}
		w.collectWaits(ch, name, s.waits.Get(name), false)
	}
}
