package prometheus

import (
	"fmt"
	"slices"
	"time"

	"github.com/rxbulkhead/bulkhead/internal/waitstats"
	"github.com/rxbulkhead/bulkhead/pool"
)

// Option configures NewCollector and NewPoolCollector.
type Option interface{ apply(*options) }

type options struct {
	buckets      []time.Duration
	resilience4j bool
	pools        *pool.Registry // WithPools
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// DefaultWaitBuckets returns the upper bounds of the wait histogram when
// WithWaitBuckets is not given: 100 µs, 250 µs, 500 µs, 1 ms, 2.5 ms, 5 ms,
// 10 ms, 25 ms, 50 ms, 100 ms, 250 ms, 500 ms, 1 s, 2.5 s, 5 s and 10 s, for
// the waits users configure (sub-millisecond hand-offs to waits of seconds).
func DefaultWaitBuckets() []time.Duration { return slices.Clone(waitstats.DefaultBuckets) }

// WithWaitBuckets sets the upper bounds of bulkhead_wait_duration_seconds.
// They must be positive and strictly increasing; NewCollector panics,
// naming the fault, otherwise (a programming error, like a bad
// prometheus.HistogramOpts).
func WithWaitBuckets(bounds ...time.Duration) Option {
	return optionFunc(func(o *options) {
		o.buckets = slices.Clone(bounds)
	})
}

// WithResilience4jNames also exports the two gauges under the names of
// resilience4j-micrometer, resilience4j_bulkhead_available_concurrent_calls
// and resilience4j_bulkhead_max_allowed_concurrent_calls, labelled name, so
// that dashboards built for resilience4j keep working.
func WithResilience4jNames() Option {
	return optionFunc(func(o *options) { o.resilience4j = true })
}

func newOptions(caller string, opts []Option) options {
	o := options{buckets: waitstats.DefaultBuckets}
	for _, opt := range opts {
		if opt == nil {
			panic(fmt.Sprintf("bulkhead/contrib/prometheus: %s called with a nil Option", caller))
		}
		opt.apply(&o)
	}
	if err := waitstats.CheckBuckets(o.buckets); err != nil {
		panic(fmt.Sprintf("bulkhead/contrib/prometheus: %s: WithWaitBuckets: %v", caller, err))
	}
	return o
}
