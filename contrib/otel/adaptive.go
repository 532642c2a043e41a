package otel

import (
	"context"
	"errors"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/rxbulkhead/bulkhead/adaptive"
)

// AdaptiveInstruments are the OpenTelemetry instruments that observe an
// adaptive.Registry, from Bulkhead.Stats, with the attribute name:
//
//	bulkhead.adaptive.limit     Int64ObservableGauge    {call}  the limit in force
//	bulkhead.adaptive.estimate  Float64ObservableGauge  {call}  the algorithm's last estimate
//	bulkhead.adaptive.rtt       Float64ObservableGauge  s       the last window's mean RTT
//	bulkhead.adaptive.at_floor  Int64ObservableGauge    1       1 while the limit sits at the floor (Config.Min), else 0
//
// Start Instruments over the same bulkhead.Registry for the permits and the
// calls.
type AdaptiveInstruments struct {
	reg    metric.Registration
	closed atomic.Bool
}

// StartAdaptive creates the instruments on the meter named ScopeName and
// registers their callback. It fails, registering nothing, if an option is
// nil (with an error naming it) or the meter cannot create an instrument
// or register the callback, and panics if r is nil. Of the options, only
// WithMeterProvider applies here. Call Close to stop.
func StartAdaptive(r *adaptive.Registry, opts ...Option) (*AdaptiveInstruments, error) {
	if r == nil {
		panic("bulkhead/contrib/otel: StartAdaptive called with a nil *adaptive.Registry")
	}
	cfg, err := newConfig("StartAdaptive", opts)
	if err != nil {
		return nil, err
	}
	meter := cfg.provider.Meter(ScopeName)
	limit, err1 := meter.Int64ObservableGauge("bulkhead.adaptive.limit", metric.WithUnit("{call}"),
		metric.WithDescription("Concurrency limit the adaptive controller applied last."))
	estimate, err2 := meter.Float64ObservableGauge("bulkhead.adaptive.estimate", metric.WithUnit("{call}"),
		metric.WithDescription("Limit the algorithm estimated last, before floor, ceiling and smoothing."))
	rtt, err3 := meter.Float64ObservableGauge("bulkhead.adaptive.rtt", metric.WithUnit("s"),
		metric.WithDescription("Mean round-trip time of the calls of the last window."))
	atFloor, err4 := meter.Int64ObservableGauge("bulkhead.adaptive.at_floor", metric.WithUnit("1"),
		metric.WithDescription("1 while the adaptive limit sits at its floor, else 0."))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, err
	}
	in := &AdaptiveInstruments{}
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if in.closed.Load() {
			return nil
		}
		for _, b := range r.All() {
			st := b.Stats()
			attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("name", b.Name())))
			o.ObserveInt64(limit, int64(st.Limit), attrs)
			o.ObserveFloat64(estimate, st.Estimate, attrs)
			o.ObserveFloat64(rtt, st.RTT.Seconds(), attrs)
			floor := int64(0)
			if st.AtFloor {
				floor = 1
			}
			o.ObserveInt64(atFloor, floor, attrs)
		}
		return nil
	}, limit, estimate, rtt, atFloor)
	if err != nil {
		return nil, err
	}
	in.reg = reg
	return in, nil
}

// Close unregisters the callback and returns the error of unregistering.
// Close is idempotent.
func (in *AdaptiveInstruments) Close() error {
	if in.closed.Swap(true) {
		return nil
	}
	return in.reg.Unregister()
}
