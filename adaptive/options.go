package adaptive

import (
	"fmt"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// Option configures New, Watch, NewRegistry and WatchRegistry; a nil
// Option makes them fail with an error naming its index.
type Option interface{ apply(*options) }

type options struct {
	clock          bulkhead.Clock
	onlyConfigured bool
	onFloor        func(FloorEvent)
}

// newOptions applies opts over the defaults for the constructor whose
// errors start with prefix (`adaptive bulkhead "x"`, `adaptive:
// NewRegistry`). A nil option, or WithClock(nil), fails it, the option
// named by its index in opts.
func newOptions(prefix string, opts []Option) (options, error) {
	o := options{clock: realClock{}}
	for i, opt := range opts {
		if opt == nil {
			return o, fmt.Errorf("%s: opts[%d] must not be nil", prefix, i)
		}
		opt.apply(&o)
	}
	if o.clock == nil {
		return o, fmt.Errorf("%s: WithClock: clock must not be nil", prefix)
	}
	return o, nil
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

// FloorEvent reports that a controller's limit reached its floor
// (Config.Min) or left it. A limit at the floor for long on a partner that
// answers in time is the sign of a limit algorithm that starves it (see
// the floor rule on Config.MaxCutPerSecond and on Capacity).
type FloorEvent struct {
	Name    string    // the bulkhead's name
	AtFloor bool      // true: reached the floor; false: left it
	Limit   int       // the limit applied
	Time    time.Time // when, on the controller's clock
	// Duration is, when the limit leaves the floor, how long it sat there.
	Duration time.Duration
}

// OnFloor makes the controller call f when its limit reaches the floor
// and when it leaves it. f runs on the goroutine whose finishing call
// closed the window, after the controller's lock is released and before
// the new limit is applied to the semaphore; it may call the Bulkhead's
// methods (Stats, say), and a panic in f goes on to that goroutine once
// the finishing call's permit is back and the new limit applied (the
// controller's state is already consistent). For a Registry, every
// partner's controller calls f.
func OnFloor(f func(FloorEvent)) Option {
	return optionFunc(func(o *options) { o.onFloor = f })
}
