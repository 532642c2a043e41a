package otel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/callstats"
)

// ScopeName is the instrumentation scope of the meter Start uses.
const ScopeName = "github.com/rxbulkhead/bulkhead/contrib/otel"

// Instruments are the OpenTelemetry instruments that observe the bulkheads
// of one or more bulkhead.MetricsSources (a *bulkhead.Registry, the pools of
// a pool.Registry with WithPools, the fleet's Registry of contrib/redis with
// WithSources), every kind with the same instruments:
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
//	bulkhead.call.duration                 Float64Histogram (s)    time calls held their permit, grant
//	                                                               to finish (Event.CallDuration)
//	bulkhead.rejected_calls                Int64ObservableCounter  rejections, by attribute reason =
//	                                                               no_wait, queue_full, wait_timeout, evicted,
//	                                                               unavailable (bulkhead.Unavailable)
//	bulkhead.shadowed_calls                Int64ObservableCounter  calls let through in shadow mode, by
//	                                                               attribute reason = would_wait, no_wait,
//	                                                               queue_full, evicted (only for a bulkhead
//	                                                               in shadow mode or that has been)
//
// and, for the sources as a whole (no attribute; the sums over the
// sources):
//
//	bulkhead.registry.bulkheads             Int64ObservableGauge    live bulkheads, the catch-all included
//	bulkhead.registry.evictions             Int64ObservableCounter  bulkheads evicted as idle (WithIdleTimeout)
//	bulkhead.registry.catch_all_calls       Int64ObservableCounter  keyed calls sent to the catch-all (WithMaxBulkheads)
//
// The two histograms are recorded by the goroutine that publishes each
// event: bulkhead.wait.duration for every CallPermitted and CallRejected
// (a permit granted at once, a rejection NoWait or QueueFull, with zero;
// a fleet bulkhead's calls all wait for their round trip to Redis),
// bulkhead.call.duration for every CallFinished whose finish knew its
// start (see bulkhead.Event.CallDuration), with explicit boundaries
// DefaultWaitBuckets and DefaultCallDurationBuckets unless WithWaitBuckets
// or WithCallDurationBuckets say otherwise. Through a Prometheus exporter
// they are bulkhead_wait_duration_seconds and
// bulkhead_call_duration_seconds, and bulkhead.rejected_calls is
// bulkhead_rejected_calls_total, as in contrib/prometheus.
//
// The registry's instruments count bulkheads ("{bulkhead}") or calls
// ("{call}") and have no attribute. The others all have the unit "{call}"
// (the histograms "s") and the attribute name (the bulkhead's name), so
// that a Prometheus exporter yields the same series as the
// contrib/prometheus collector (bulkhead_calls_total for the counter).
//
// Every bulkhead a source holds at collection time is reported (its
// AllMetrics), including those created after Start. Gauges are read at
// each collection. Counts come from the events (the source's OnEvent): a
// bulkhead that exists when Start is called is counted from then on, and
// one created later from its creation, so no event is lost before its
// first collection. A bulkhead removed from a bulkhead.Registry is no
// longer observed nor counted; one created again under its name continues
// its count, which therefore never goes down (as a cumulative counter must
// not). A bulkhead evicted as idle (OnEvict: bulkhead.WithIdleTimeout,
// pool.WithIdleTimeout) is no longer observed and its counts are
// forgotten, so that passing keys leave no observed series and no
// attribute sets of ours behind; one created again under its name counts
// from zero (a new series for a cumulative exporter, a reset for
// Prometheus).
//
// The histograms are synchronous instruments, whose series the SDK keeps:
// with delta temporality an evicted bulkhead's histogram series are
// exported no more after the first collection that follows its eviction
// (the SDK drops the attribute sets not recorded during the interval);
// with cumulative temporality the SDK keeps them for the life of the
// MeterProvider, up to its cardinality limit (2000 series per instrument
// by default, then an overflow series). Where keys come and go, give the
// reader delta temporality (sdkmetric.WithTemporalitySelector), or a
// cardinality limit.
type Instruments struct {
	watches []*callstats.Watch // the source of Start, then WithSources'
	reg     metric.Registration
	closed  atomic.Bool

	available, maxAllowed, queued, maxQueued, calls metric.Int64Observable
	rejections, shadowed                            metric.Int64Observable
	bulkheads, evictions, catchAllCalls             metric.Int64Observable
	wait, duration                                  metric.Float64Histogram

	records sync.Map // bulkhead name -> *recordAttrs, dropped on eviction

	mu    sync.Mutex           // guards attrs
	attrs map[string]*attrSets // by bulkhead name, for the bulkheads of the last collection
}

// attrSets are the attribute sets of one bulkhead's observations, built
// once per bulkhead rather than at every collection.
type attrSets struct {
	name    metric.MeasurementOption
	kinds   [len(callstats.Kinds)]metric.MeasurementOption
	reasons [len(callstats.Reasons)]metric.MeasurementOption
	shadows [1 + len(callstats.ShadowReasons)]metric.MeasurementOption
}

func newAttrSets(name string) *attrSets {
	set := func(k, v string) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(attribute.String("name", name), attribute.String(k, v)))
	}
	a := &attrSets{name: metric.WithAttributeSet(attribute.NewSet(attribute.String("name", name)))}
	for i, k := range callstats.Kinds {
		a.kinds[i] = set("kind", k.String())
	}
	for i, r := range callstats.Reasons {
		a.reasons[i] = set("reason", callstats.ReasonLabel(r))
	}
	for i := range a.shadows {
		a.shadows[i] = set("reason", callstats.ShadowLabel(i))
	}
	return a
}

// recordAttrs are the record options of one bulkhead's histograms, built
// once, so that recording allocates nothing.
type recordAttrs struct {
	granted, rejected, name []metric.RecordOption
}

// Start creates the instruments on the meter named ScopeName, starts
// counting the events of the bulkheads of src (and of the sources of
// WithSources and WithPools), present and future, and registers the
// instruments' callback. A *bulkhead.Registry is a MetricsSource; so are
// pool.Registry.MetricsSource() and the fleet's Registry. It fails,
// counting nothing, if an option is nil (with an error naming it), the
// meter cannot create an instrument or register the callback, or a bucket
// option has bad bounds; it panics if src is nil. Call Close to stop.
func Start(src bulkhead.MetricsSource, opts ...Option) (*Instruments, error) {
	if isNil(src) {
		panic("bulkhead/contrib/otel: Start called with a nil bulkhead.MetricsSource")
	}
	cfg, err := newConfig("Start", opts)
	if err != nil {
		return nil, err
	}
	waitBounds, err := bounds("WithWaitBuckets", cfg.waitBuckets, callstats.DefaultWaitBuckets)
	if err != nil {
		return nil, err
	}
	durationBounds, err := bounds("WithCallDurationBuckets", cfg.durationBuckets, callstats.DefaultDurationBuckets)
	if err != nil {
		return nil, err
	}
	meter := cfg.provider.Meter(ScopeName)

	in := &Instruments{}
	gauge := func(name, unit, desc string) metric.Int64Observable {
		g, e := meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		err = errors.Join(err, e)
		return g
	}
	counter := func(name, unit, desc string) metric.Int64Observable {
		c, e := meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		err = errors.Join(err, e)
		return c
	}
	histogram := func(name, desc string, bounds []float64) metric.Float64Histogram {
		h, e := meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(bounds...))
		err = errors.Join(err, e)
		return h
	}
	in.available = gauge("bulkhead.available_concurrent_calls", "{call}", "Number of free permits of the bulkhead.")
	in.maxAllowed = gauge("bulkhead.max_allowed_concurrent_calls", "{call}", "Configured number of permits of the bulkhead (MaxConcurrentCalls).")
	in.queued = gauge("bulkhead.queued_calls", "{call}", "Number of calls waiting for a permit.")
	in.maxQueued = gauge("bulkhead.max_queued_calls", "{call}", "Configured bound of the wait queue (MaxQueuedCalls); 0 means no queue, bulkhead.Unbounded (MaxInt) no bound.")
	in.calls = counter("bulkhead.calls", "{call}", "Calls of the bulkhead by kind (permitted, rejected, finished, cancelled), counted since the instruments started.")
	in.rejections = counter("bulkhead.rejected_calls", "{call}", "Calls rejected, by reason: no_wait, queue_full, wait_timeout, evicted, unavailable.")
	in.shadowed = counter("bulkhead.shadowed_calls", "{call}", "Calls a bulkhead in shadow mode let through that it would have queued (would_wait) or rejected (no_wait, queue_full, evicted).")
	in.bulkheads = gauge("bulkhead.registry.bulkheads", "{bulkhead}", "Number of live bulkheads of the registry, the catch-all included.")
	in.evictions = counter("bulkhead.registry.evictions", "{bulkhead}", "Number of bulkheads the registry evicted as idle.")
	in.catchAllCalls = counter("bulkhead.registry.catch_all_calls", "{call}", "Number of keyed calls the registry sent to its catch-all bulkhead because it held its maximum number of bulkheads.")
	in.wait = histogram("bulkhead.wait.duration", "Time calls waited for a permit, by outcome: granted (zero for a permit granted at once) or rejected (zero for a rejection without waiting).", waitBounds)
	in.duration = histogram("bulkhead.call.duration", "Time calls held their permit, from the grant to the finish, for the calls whose finish knew their start.", durationBounds)
	if err != nil {
		return nil, err
	}
	// The tables count; the histograms are the SDK's (nil bounds).
	hooks := callstats.Hooks{Event: in.record, Evict: func(name string) { in.records.Delete(name) }}
	for _, s := range callstats.Distinct(append([]bulkhead.MetricsSource{src}, cfg.sources...)) {
		in.watches = append(in.watches, callstats.NewWatch(s, nil, nil, hooks))
	}
	in.reg, err = meter.RegisterCallback(in.observe, in.available, in.maxAllowed, in.queued, in.maxQueued, in.calls,
		in.rejections, in.shadowed, in.bulkheads, in.evictions, in.catchAllCalls)
	if err != nil {
		in.closeWatches()
		return nil, err
	}
	return in, nil
}

// bounds checks the bucket bounds of an option (the defaults if the
// option was not given) and returns them in seconds.
func bounds(option string, given *[]time.Duration, defaults []time.Duration) ([]float64, error) {
	ds := defaults
	if given != nil {
		ds = *given
	}
	if err := callstats.CheckBuckets(ds); err != nil {
		return nil, fmt.Errorf("bulkhead/contrib/otel: %s: %w", option, err)
	}
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out, nil
}

// record is the watches' hook: it runs on the goroutine that publishes e
// and records the histograms, unless Close has begun (a publication under
// way when Close removed the listener still reaches it).
func (in *Instruments) record(e bulkhead.Event) {
	if in.closed.Load() {
		return
	}
	switch e.Type {
	case bulkhead.CallPermitted:
		in.wait.Record(context.Background(), e.Wait.Seconds(), in.recordAttrsOf(e.Name).granted...)
	case bulkhead.CallRejected:
		in.wait.Record(context.Background(), e.Wait.Seconds(), in.recordAttrsOf(e.Name).rejected...)
	case bulkhead.CallFinished:
		if e.CallDuration > 0 {
			in.duration.Record(context.Background(), e.CallDuration.Seconds(), in.recordAttrsOf(e.Name).name...)
		}
	}
}

func (in *Instruments) recordAttrsOf(name string) *recordAttrs {
	if v, ok := in.records.Load(name); ok {
		return v.(*recordAttrs)
	}
	opts := func(kv ...attribute.KeyValue) []metric.RecordOption {
		return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(append(kv, attribute.String("name", name))...))}
	}
	v, _ := in.records.LoadOrStore(name, &recordAttrs{
		granted:  opts(attribute.String("outcome", "granted")),
		rejected: opts(attribute.String("outcome", "rejected")),
		name:     opts(),
	})
	return v.(*recordAttrs)
}

// observe is the callback. The SDK may run it on any goroutine, also
// concurrently with itself: the tables and the sources are safe for
// concurrent use and attrs is guarded by mu.
func (in *Instruments) observe(_ context.Context, o metric.Observer) error {
	if in.closed.Load() {
		return nil
	}
	st := callstats.SumStats(in.watches)
	o.ObserveInt64(in.bulkheads, int64(st.Bulkheads))
	o.ObserveInt64(in.evictions, int64(st.Evictions))
	o.ObserveInt64(in.catchAllCalls, int64(st.CatchAllCalls))
	in.mu.Lock()
	defer in.mu.Unlock()
	next := make(map[string]*attrSets, len(in.attrs))
	callstats.Each(in.watches, func(w *callstats.Watch, name string, m bulkhead.Metrics) {
		a := in.attrs[name]
		if a == nil {
			a = newAttrSets(name)
		}
		next[name] = a
		o.ObserveInt64(in.available, int64(m.AvailableConcurrentCalls), a.name)
		o.ObserveInt64(in.maxAllowed, int64(m.MaxAllowedConcurrentCalls), a.name)
		o.ObserveInt64(in.queued, int64(m.QueuedCalls), a.name)
		o.ObserveInt64(in.maxQueued, int64(m.MaxQueuedCalls), a.name)
		in.observeCounts(o, a, w.Get(name), m.ShadowMode)
	})
	in.attrs = next // the sets of removed bulkheads are dropped
	return nil
}

// observeCounts reports the counts of one bulkhead from s (all zero if s is
// nil: no event yet), and its shadow counts if shadow is set (it is in
// shadow mode) or one is not zero (it was).
func (in *Instruments) observeCounts(o metric.Observer, a *attrSets, s *callstats.Stats, shadow bool) {
	if s == nil {
		s = &callstats.Stats{}
	}
	for i, k := range callstats.Kinds {
		o.ObserveInt64(in.calls, int64(s.Count(k)), a.kinds[i])
	}
	for i := range callstats.Reasons {
		o.ObserveInt64(in.rejections, int64(s.Rejections[i].Load()), a.reasons[i])
	}
	counts, export := s.ShadowCounts(shadow)
	if !export {
		return
	}
	for i, n := range counts {
		o.ObserveInt64(in.shadowed, int64(n), a.shadows[i])
	}
}

func (in *Instruments) closeWatches() {
	for _, w := range in.watches {
		w.Close()
	}
}

// Close unregisters the callback, so the observed instruments report
// nothing more, and stops counting events and recording the histograms:
// an event that reaches the instruments once Close has begun (one a
// bulkhead was publishing when Close ran) is not recorded. It returns the
// error of unregistering. Close is idempotent.
func (in *Instruments) Close() error {
	in.closed.Store(true)
	in.closeWatches()
	return in.reg.Unregister()
}
