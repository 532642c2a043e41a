package otel

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/callstats"
	"github.com/rxbulkhead/bulkhead/internal/nilcheck"
	"github.com/rxbulkhead/bulkhead/pool"
)

// Option configures Start.
type Option interface{ apply(*config) }

type config struct {
	provider                     metric.MeterProvider
	nilProvider                  bool                     // WithMeterProvider(nil): Start fails
	waitBuckets, durationBuckets *[]time.Duration         // nil: the defaults
	sources                      []bulkhead.MetricsSource // WithSources, WithPools
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMeterProvider makes Start create its instruments with mp. The default
// is the global provider, otel.GetMeterProvider(), at the time of Start. A
// nil mp (or a nil pointer such as a nil *sdkmetric.MeterProvider) makes
// Start, StartAdaptive and StartBudgets fail with an error naming it: leave
// the option out for the global provider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) {
		if nilcheck.Is(mp) {
			c.nilProvider = true
			return
		}
		c.provider = mp
	})
}

// newConfig applies opts for caller (Start, StartAdaptive, StartBudgets):
// it fails naming a nil option (by its index) or WithMeterProvider(nil),
// and sets the global provider if opts set none.
func newConfig(caller string, opts []Option) (config, error) {
	cfg := config{}
	for i, o := range opts {
		if o == nil {
			return cfg, fmt.Errorf("bulkhead/contrib/otel: %s called with a nil Option at index %d", caller, i)
		}
		o.apply(&cfg)
	}
	if cfg.nilProvider {
		return cfg, errors.New("bulkhead/contrib/otel: WithMeterProvider called with a nil metric.MeterProvider")
	}
	if cfg.provider == nil {
		cfg.provider = otel.GetMeterProvider()
	}
	return cfg, nil
}

// WithWaitBuckets sets the explicit bucket boundaries of
// bulkhead.wait.duration. They must be positive and strictly increasing
// (Start fails otherwise). The default is DefaultWaitBuckets.
func WithWaitBuckets(bounds ...time.Duration) Option {
	return optionFunc(func(c *config) { b := slices.Clone(bounds); c.waitBuckets = &b })
}

// WithCallDurationBuckets sets the explicit bucket boundaries of
// bulkhead.call.duration, with the rules of WithWaitBuckets. The default is
// DefaultCallDurationBuckets.
func WithCallDurationBuckets(bounds ...time.Duration) Option {
	return optionFunc(func(c *config) { b := slices.Clone(bounds); c.durationBuckets = &b })
}

// DefaultWaitBuckets returns the default boundaries of bulkhead.wait.duration:
// 100 µs, 250 µs, 500 µs, 1 ms, 2.5 ms, 5 ms, 10 ms, 25 ms, 50 ms, 100 ms,
// 250 ms, 500 ms, 1 s, 2.5 s, 5 s and 10 s, the same as contrib/prometheus.
func DefaultWaitBuckets() []time.Duration { return slices.Clone(callstats.DefaultWaitBuckets) }

// DefaultCallDurationBuckets returns the default boundaries of
// bulkhead.call.duration: 500 µs, 1 ms, 2.5 ms, 5 ms, 10 ms, 25 ms, 50 ms,
// 100 ms, 250 ms, 500 ms, 1 s, 2.5 s, 5 s, 10 s, 30 s and 60 s, the same as
// contrib/prometheus.
func DefaultCallDurationBuckets() []time.Duration {
	return slices.Clone(callstats.DefaultDurationBuckets)
}

// WithSources makes Start also observe the bulkheads of srcs (the fleet's
// Registry of contrib/redis, another bulkhead.Registry...), with the same
// instruments, after those of the source given to Start. A bulkhead named
// like one of an earlier source is left out of the observed instruments
// (its series would clash), and its waits and call durations are recorded
// into the earlier one's histogram series: name them apart. The
// registry-wide instruments observe the sums over the sources. A source
// given twice (here, to Start or WithPools) is observed once. Start panics
// if a source is nil.
func WithSources(srcs ...bulkhead.MetricsSource) Option {
	return optionFunc(func(c *config) {
		for _, s := range srcs {
			if isNil(s) {
				panic("bulkhead/contrib/otel: WithSources called with a nil bulkhead.MetricsSource")
			}
		}
		c.sources = append(c.sources, srcs...)
	})
}

// WithPools makes Start also observe the pools of preg (its MetricsSource:
// see pool.Registry.MetricsSource for what a pool's data points mean), as
// WithSources does. Start panics if preg is nil, as NewCollector of
// contrib/prometheus does.
func WithPools(preg *pool.Registry) Option {
	return optionFunc(func(c *config) {
		if preg == nil {
			panic("bulkhead/contrib/otel: WithPools called with a nil *pool.Registry")
		}
		c.sources = append(c.sources, preg.MetricsSource())
	})
}

// isNil reports whether src is nil, or a nil pointer such as a nil
// *bulkhead.Registry.
func isNil(src bulkhead.MetricsSource) bool { return callstats.IsNil(src) }
