package otel

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/callcount"
	"github.com/rxbulkhead/bulkhead/pool"
)

// ScopeName is the instrumentation scope of the meter Start uses.
const ScopeName = "github.com/rxbulkhead/bulkhead/contrib/otel"

// Option configures Start.
type Option interface{ apply(*config) }

type config struct {
	provider metric.MeterProvider
	buckets  []time.Duration // nil: DefaultWaitBuckets
	pools    *pool.Registry  // WithPools, or nil
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMeterProvider makes Start create its instruments with mp. The default
// is the global provider, otel.GetMeterProvider(), at the time of Start.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.provider = mp })
}

// Instruments are the OpenTelemetry instruments that observe a Registry:
//
//	bulkhead.available_concurrent_calls    Int64ObservableGauge    free permits
//	bulkhead.max_allowed_concurrent_calls  Int64ObservableGauge    configured permits
//	bulkhead.queued_calls                  Int64ObservableGauge    calls waiting for a permit
//	bulkhead.max_queued_calls              Int64ObservableGauge    queue bound (0: no queue; bulkhead.Unbounded)
//	bulkhead.calls                         Int64ObservableCounter  events, by attribute kind =
//	                                                               permitted, rejected, finished, cancelled
//	bulkhead.wait.duration                 Float64Histogram (s)    time calls waited for a permit
//	                                                               (Event.Wait), by attribute outcome =
//	                                                               granted, rejected
//	bulkhead.rejected_calls                Int64ObservableCounter  rejections, by attribute reason =
//	                                                               no_wait, queue_full, wait_timeout, evicted
//	bulkhead.shadowed_calls                Int64ObservableCounter  calls let through in shadow mode, by
//	                                                               attribute reason = would_wait, no_wait,
//	                                                               queue_full, evicted (only for a bulkhead
//	                                                               in shadow mode or that has been)
//
// and, for the registry as a whole (no attribute):
//
//	bulkhead.registry.bulkheads             Int64ObservableGauge    live bulkheads, the catch-all included
//	bulkhead.registry.evictions             Int64ObservableCounter  bulkheads evicted as idle (WithIdleTimeout)
//	bulkhead.registry.catch_all_calls       Int64ObservableCounter  keyed calls sent to the catch-all (WithMaxBulkheads)
//
// bulkhead.wait.duration is recorded by the goroutine that publishes each
// CallPermitted or CallRejected (a permit granted at once, a rejection
// NoWait or QueueFull, with zero), with explicit boundaries
// DefaultWaitBuckets unless WithWaitBuckets says otherwise; through a
// Prometheus exporter it is bulkhead_wait_duration_seconds, and
// bulkhead.rejected_calls is bulkhead_rejected_calls_total, as in
// contrib/prometheus. Being a synchronous instrument, the histogram's
// series of an evicted bulkhead are kept by the SDK's aggregation under
// cumulative temporality (use delta temporality, or the SDK's cardinality
// limit, where keys come and go); the observed instruments drop them.
//
// The registry's instruments count bulkheads ("{bulkhead}") or calls
// ("{call}") and have no attribute. The others all have the unit "{call}" and the attribute name (the bulkhead's name),
// so that a Prometheus exporter yields the same series as the
// contrib/prometheus collector (bulkhead_calls_total for the counter).
//
// Every bulkhead the registry holds at collection time is reported,
// including those created after Start. Gauges are read from
// Semaphore.Metrics at each collection. Counts come from a
// callcount.Counter: a bulkhead that exists when Start is called is
// counted from then on, and one created later from its creation, so no
// event is lost before its first collection. A bulkhead removed from the
// registry is no longer observed nor counted; one created again under its
// name continues its count, which therefore never goes down (as a
// cumulative counter must not). A bulkhead evicted as idle
// (bulkhead.WithIdleTimeout) is no longer observed and its counts are
// forgotten, so that passing keys leave no series and no attribute sets
// behind; one created again under its name counts from zero (a new
// series for a cumulative exporter, a reset for Prometheus).
type Instruments struct {
	registry *bulkhead.Registry
	counter  *callcount.Counter
	reg      metric.Registration
	closed   atomic.Bool

	available, maxAllowed, queued, maxQueued, calls metric.Int64Observable
	bulkheads, evictions, catchAllCalls             metric.Int64Observable

	waits *waitInstruments
	pools *poolWatch // WithPools, or nil

	mu    sync.Mutex           // guards attrs
	attrs map[string]*attrSets // by bulkhead name, for the bulkheads of the last collection
}

// attrSets are the attribute sets of one bulkhead's observations, built
// once per bulkhead rather than at every collection.
type attrSets struct {
	name                                     metric.MeasurementOption
	permitted, rejected, finished, cancelled metric.MeasurementOption
	reasons                                  [4]metric.MeasurementOption // bulkhead.rejected_calls, see reasonSets
	shadows                                  [5]metric.MeasurementOption // bulkhead.shadowed_calls, see shadowSets
}

func newAttrSets(name string) *attrSets {
	kind := func(t bulkhead.EventType) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(attribute.String("name", name), attribute.String("kind", t.String())))
	}
	return &attrSets{
		name:      metric.WithAttributeSet(attribute.NewSet(attribute.String("name", name))),
		permitted: kind(bulkhead.CallPermitted),
		rejected:  kind(bulkhead.CallRejected),
		finished:  kind(bulkhead.CallFinished),
		cancelled: kind(bulkhead.CallCancelled),
		reasons:   reasonSets(name),
		shadows:   shadowSets(name),
	}
}

// Start creates the instruments on the meter named ScopeName, starts
// counting the events of reg's bulkheads, present and future, and registers
// the instruments' callback. It fails, counting nothing, if the meter
// cannot create an instrument or register the callback, and panics if reg
// is nil. Call Close to stop.
func Start(reg *bulkhead.Registry, opts ...Option) (*Instruments, error) {
	if reg == nil {
		panic("bulkhead/contrib/otel: Start called with a nil *bulkhead.Registry")
	}
	cfg := config{}
	for _, o := range opts {
		o.apply(&cfg)
	}
	if cfg.provider == nil {
		cfg.provider = otel.GetMeterProvider()
	}
	meter := cfg.provider.Meter(ScopeName)

	in := &Instruments{registry: reg}
	var err error
	gauge := func(name, desc string) metric.Int64Observable {
		g, e := meter.Int64ObservableGauge(name, metric.WithUnit("{call}"), metric.WithDescription(desc))
		err = errors.Join(err, e)
		return g
	}
	in.available = gauge("bulkhead.available_concurrent_calls", "Number of free permits of the bulkhead.")
	in.maxAllowed = gauge("bulkhead.max_allowed_concurrent_calls", "Configured number of permits of the bulkhead (MaxConcurrentCalls).")
	in.queued = gauge("bulkhead.queued_calls", "Number of calls waiting for a permit.")
	in.maxQueued = gauge("bulkhead.max_queued_calls", "Configured bound of the wait queue (MaxQueuedCalls); 0 means no queue, bulkhead.Unbounded (MaxInt) no bound.")
	calls, e := meter.Int64ObservableCounter("bulkhead.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Calls of the bulkhead by kind (permitted, rejected, finished, cancelled), counted since the instruments started."))
	in.calls, err = calls, errors.Join(err, e)
	bulkheads, e := meter.Int64ObservableGauge("bulkhead.registry.bulkheads", metric.WithUnit("{bulkhead}"),
		metric.WithDescription("Number of live bulkheads of the registry, the catch-all included."))
	in.bulkheads, err = bulkheads, errors.Join(err, e)
	counter := func(name, unit, desc string) metric.Int64Observable {
		c, e := meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		err = errors.Join(err, e)
		return c
	}
	in.evictions = counter("bulkhead.registry.evictions", "{bulkhead}", "Number of bulkheads the registry evicted as idle.")
	in.catchAllCalls = counter("bulkhead.registry.catch_all_calls", "{call}", "Number of keyed calls the registry sent to its catch-all bulkhead because it held its maximum number of bulkheads.")
	in.waits, e = newWaitInstruments(meter, cfg)
	err = errors.Join(err, e)
	if err != nil {
		return nil, err
	}
	in.counter = callcount.New(reg)
	in.waits.start(reg)
	if cfg.pools != nil {
		in.pools = newPoolWatch(cfg.pools, in.waits)
	}
	in.reg, err = meter.RegisterCallback(in.observe, in.available, in.maxAllowed, in.queued, in.maxQueued, in.calls,
		in.bulkheads, in.evictions, in.catchAllCalls, in.waits.rejections, in.waits.shadowed)
	if err != nil {
		in.counter.Close()
		in.waits.close()
		if in.pools != nil {
			in.pools.close()
		}
		return nil, err
	}
	return in, nil
}

// observe is the callback. The SDK may run it on any goroutine, also
// concurrently with itself: the counter and the registry are safe for
// concurrent use and attrs is guarded by mu.
func (in *Instruments) observe(_ context.Context, o metric.Observer) error {
	if in.closed.Load() {
		return nil
	}
	st := in.registry.Stats()
	o.ObserveInt64(in.bulkheads, int64(st.Bulkheads))
	o.ObserveInt64(in.evictions, int64(st.Evictions))
	o.ObserveInt64(in.catchAllCalls, int64(st.CatchAllCalls))
	all := in.registry.All()
	sets := in.attrSetsOf(all)
	for i, s := range all {
		a := sets[i]
		m := s.Metrics()
		o.ObserveInt64(in.available, int64(m.AvailableConcurrentCalls), a.name)
		o.ObserveInt64(in.maxAllowed, int64(m.MaxAllowedConcurrentCalls), a.name)
		o.ObserveInt64(in.queued, int64(m.QueuedCalls), a.name)
		o.ObserveInt64(in.maxQueued, int64(m.MaxQueuedCalls), a.name)
		n := in.counter.Counts(s.Name())
		o.ObserveInt64(in.calls, int64(n.Permitted), a.permitted)
		o.ObserveInt64(in.calls, int64(n.Rejected), a.rejected)
		o.ObserveInt64(in.calls, int64(n.Finished), a.finished)
		o.ObserveInt64(in.calls, int64(n.Cancelled), a.cancelled)
		in.waits.observeRejections(o, s.Name(), a, s.Config().ShadowMode)
	}
	if in.pools != nil {
		names := make(map[string]bool, len(all))
		for _, s := range all {
			names[s.Name()] = true
		}
		in.pools.observe(in, o, names)
	}
	return nil
}

// attrSetsOf returns the attribute sets of bhs, reusing those of the last
// collection, and keeps only these: the sets of removed bulkheads are
// dropped.
func (in *Instruments) attrSetsOf(bhs []*bulkhead.Semaphore) []*attrSets {
	out := make([]*attrSets, len(bhs))
	next := make(map[string]*attrSets, len(bhs))
	in.mu.Lock()
	defer in.mu.Unlock()
	for i, s := range bhs {
		a := in.attrs[s.Name()]
		if a == nil {
			a = newAttrSets(s.Name())
		}
		next[s.Name()] = a
		out[i] = a
	}
	in.attrs = next
	return out
}

// Close unregisters the callback, so the instruments report nothing more,
// and stops counting events. It returns the error of unregistering. Close
// is idempotent.
func (in *Instruments) Close() error {
	in.closed.Store(true)
	in.counter.Close()
	in.waits.close()
	if in.pools != nil {
		in.pools.close()
	}
	return in.reg.Unregister()
}
