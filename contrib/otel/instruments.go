package otel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/rxbulkhead/bulkhead"
)

// ScopeName is the instrumentation scope of the meter Start uses.
const ScopeName = "github.com/rxbulkhead/bulkhead/contrib/otel"

// Option configures Start.
type Option interface{ apply(*config) }

type config struct {
	provider metric.MeterProvider
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
//	bulkhead.max_queued_calls              Int64ObservableGauge    queue bound (0: unbounded)
//	bulkhead.calls                         Int64ObservableCounter  events, by attribute kind =
//	                                                               permitted, rejected, finished, cancelled
//
// All have the unit "{call}" and the attribute name (the bulkhead's name),
// so that a Prometheus exporter yields the same series as the
// contrib/prometheus collector (bulkhead_calls_total for the counter).
//
// Gauges are read from Semaphore.Metrics at each collection, so every
// bulkhead of the registry is reported, including those created after
// Start. Counts come from event listeners: Start subscribes to the
// bulkheads the registry holds, and every collection subscribes to those
// created since, so the events of a bulkhead created after Start are
// counted from the first collection that sees it (its counter starts at 0
// there). A bulkhead removed from the registry is no longer observed and its
// listener is removed.
type Instruments struct {
	t   *tracker
	reg metric.Registration

	available, maxAllowed, queued, maxQueued, calls metric.Int64Observable
}

// Start creates the instruments on the meter named ScopeName, registers
// their callback and subscribes to the events of reg's bulkheads. It fails
// if the meter cannot create an instrument or register the callback, and
// panics if reg is nil. Call Close to stop.
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

	in := &Instruments{}
	var err error
	gauge := func(name, desc string) metric.Int64Observable {
		g, e := meter.Int64ObservableGauge(name, metric.WithUnit("{call}"), metric.WithDescription(desc))
		err = errors.Join(err, e)
		return g
	}
	in.available = gauge("bulkhead.available_concurrent_calls", "Number of free permits of the bulkhead.")
	in.maxAllowed = gauge("bulkhead.max_allowed_concurrent_calls", "Configured number of permits of the bulkhead (MaxConcurrentCalls).")
	in.queued = gauge("bulkhead.queued_calls", "Number of calls waiting for a permit.")
	in.maxQueued = gauge("bulkhead.max_queued_calls", "Configured bound of the wait queue (MaxQueuedCalls); 0 means unbounded.")
	calls, e := meter.Int64ObservableCounter("bulkhead.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Calls seen by the bulkhead since it was first observed, by kind: permitted, rejected, finished, cancelled."))
	in.calls = calls
	if err = errors.Join(err, e); err != nil {
		return nil, err
	}
	in.t = newTracker(reg)
	in.reg, err = meter.RegisterCallback(in.observe, in.available, in.maxAllowed, in.queued, in.maxQueued, in.calls)
	if err != nil {
		in.t.close()
		return nil, err
	}
	return in, nil
}

// observe is the callback: the SDK may run it on any goroutine, also
// concurrently; the tracker makes that safe.
func (in *Instruments) observe(_ context.Context, o metric.Observer) error {
	for _, b := range in.t.sync() {
		if b.c == nil {
			continue // closed concurrently
		}
		m := b.s.Metrics()
		o.ObserveInt64(in.available, int64(m.AvailableConcurrentCalls), b.c.name)
		o.ObserveInt64(in.maxAllowed, int64(m.MaxAllowedConcurrentCalls), b.c.name)
		o.ObserveInt64(in.queued, int64(m.QueuedCalls), b.c.name)
		o.ObserveInt64(in.maxQueued, int64(m.MaxQueuedCalls), b.c.name)
		for i := range kinds {
			o.ObserveInt64(in.calls, int64(b.c.n[i].Load()), b.c.kinds[i])
		}
	}
	return nil
}

// Close unregisters the callback, so the instruments report nothing more,
// and removes the event listeners. It returns the error of unregistering.
// Close is idempotent.
func (in *Instruments) Close() error {
	in.t.close()
	return in.reg.Unregister()
}
