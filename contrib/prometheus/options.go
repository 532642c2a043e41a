package prometheus

import (
	"fmt"
	"slices"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/callstats"
	"github.com/rxbulkhead/bulkhead/pool"
)

// Option configures NewCollector (and NewBudgetCollector, to which only
// WithWaitBuckets applies). The constructors return no error: a nil Option
// is a programming error they panic on, as client_golang's Must functions
// do, with a message naming its index in opts (contrib/otel's Start, which
// returns an error, fails with the same words instead).
type Option interface{ apply(*options) }

type options struct {
	waitBuckets, durationBuckets []time.Duration
	resilience4j                 bool
	sources                      []bulkhead.MetricsSource // WithSources, WithPools
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// DefaultWaitBuckets returns the upper bounds of the wait histogram when
// WithWaitBuckets is not given: 100 µs, 250 µs, 500 µs, 1 ms, 2.5 ms, 5 ms,
// 10 ms, 25 ms, 50 ms, 100 ms, 250 ms, 500 ms, 1 s, 2.5 s, 5 s and 10 s, for
// the waits users configure (sub-millisecond hand-offs to waits of seconds).
func DefaultWaitBuckets() []time.Duration { return slices.Clone(callstats.DefaultWaitBuckets) }

// DefaultCallDurationBuckets returns the upper bounds of the call-duration
// histogram when WithCallDurationBuckets is not given: 500 µs, 1 ms,
// 2.5 ms, 5 ms, 10 ms, 25 ms, 50 ms, 100 ms, 250 ms, 500 ms, 1 s, 2.5 s,
// 5 s, 10 s, 30 s and 60 s, from in-memory calls to the longest client
// timeouts.
func DefaultCallDurationBuckets() []time.Duration {
	return slices.Clone(callstats.DefaultDurationBuckets)
}

// WithWaitBuckets sets the upper bounds of bulkhead_wait_duration_seconds.
// They must be positive and strictly increasing; NewCollector panics,
// naming the fault, otherwise (a programming error, like a bad
// prometheus.HistogramOpts).
func WithWaitBuckets(bounds ...time.Duration) Option {
	return optionFunc(func(o *options) { o.waitBuckets = slices.Clone(bounds) })
}

// WithCallDurationBuckets sets the upper bounds of
// bulkhead_call_duration_seconds, with the rules of WithWaitBuckets.
func WithCallDurationBuckets(bounds ...time.Duration) Option {
	return optionFunc(func(o *options) { o.durationBuckets = slices.Clone(bounds) })
}

// WithResilience4jNames also exports the two gauges under the names of
// resilience4j-micrometer, resilience4j_bulkhead_available_concurrent_calls
// and resilience4j_bulkhead_max_allowed_concurrent_calls, labelled name, so
// that dashboards built for resilience4j keep working.
func WithResilience4jNames() Option {
	return optionFunc(func(o *options) { o.resilience4j = true })
}

// WithSources makes the Collector also report the bulkheads of srcs (the
// fleet's Registry of contrib/redis, another bulkhead.Registry...), under
// the same names, after those of the source given to NewCollector. A
// bulkhead named like one of an earlier source is left out of the scrape
// (two series cannot share a name and labels): name them apart. The
// registry-wide metrics are the sums over the sources. A source given
// twice (here, to NewCollector or WithPools) is reported once. NewCollector
// panics if a source is nil (or a nil pointer), naming its index in srcs.
func WithSources(srcs ...bulkhead.MetricsSource) Option {
	return optionFunc(func(o *options) {
		for i, s := range srcs {
			if isNil(s) {
				panic(fmt.Sprintf("bulkhead/contrib/prometheus: WithSources called with a nil bulkhead.MetricsSource at index %d", i))
			}
		}
		o.sources = append(o.sources, srcs...)
	})
}

// WithPools makes the Collector also report the pools of preg (its
// MetricsSource: see pool.Registry.MetricsSource for what a pool's series
// mean), as WithSources does. NewCollector panics if preg is nil.
func WithPools(preg *pool.Registry) Option {
	return optionFunc(func(o *options) {
		if preg == nil {
			panic("bulkhead/contrib/prometheus: WithPools called with a nil *pool.Registry")
		}
		o.sources = append(o.sources, preg.MetricsSource())
	})
}

func newOptions(caller string, opts []Option) options {
	o := options{waitBuckets: callstats.DefaultWaitBuckets, durationBuckets: callstats.DefaultDurationBuckets}
	for i, opt := range opts {
		if opt == nil {
			panic(fmt.Sprintf("bulkhead/contrib/prometheus: %s called with a nil Option at index %d", caller, i))
		}
		opt.apply(&o)
	}
	if err := callstats.CheckBuckets(o.waitBuckets); err != nil {
		panic(fmt.Sprintf("bulkhead/contrib/prometheus: %s: WithWaitBuckets: %v", caller, err))
	}
	if err := callstats.CheckBuckets(o.durationBuckets); err != nil {
		panic(fmt.Sprintf("bulkhead/contrib/prometheus: %s: WithCallDurationBuckets: %v", caller, err))
	}
	return o
}

// isNil reports whether src is nil, or a nil pointer such as a nil
// *bulkhead.Registry.
func isNil(src bulkhead.MetricsSource) bool { return callstats.IsNil(src) }
