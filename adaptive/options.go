package adaptive

import (
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// Option configures New and NewRegistry.
type Option interface{ apply(*options) }

type options struct {
	clock          bulkhead.Clock
	onlyConfigured bool
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithClock makes the controller read time from c; give it the clock of the
// semaphore (bulkhead.WithClock), such as a testkit.VirtualClock. The
// default is the real clock. A nil c makes New fail.
func WithClock(c bulkhead.Clock) Option {
	return optionFunc(func(o *options) { o.clock = c })
}

// OnlyConfigured makes a Registry (NewRegistry, WatchRegistry) adaptive
// only for the partners given a config with Registry.Configure: Get of any
// other partner fails with ErrNotAdaptive, and WatchRegistry leaves its
// semaphore's limit alone. New and Watch ignore it.
func OnlyConfigured() Option {
	return optionFunc(func(o *options) { o.onlyConfigured = true })
}

// realClock is the time package; the controller only calls Now.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) bulkhead.Timer { return time.AfterFunc(d, f) }
