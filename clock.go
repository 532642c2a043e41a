package bulkhead

import (
	"fmt"
	"time"

	"github.com/rxbulkhead/bulkhead/internal/clock"
)

// Clock is the source of time of a Semaphore or a Pool: Now stamps events
// and queue deadlines, AfterFunc bounds waits (and retires idle Pool
// workers).
//
// Both call Now and AfterFunc while holding their internal lock, so an
// implementation must not call back into them from Now or AfterFunc, and
// AfterFunc must not run f before it returns (run it later, on any goroutine).
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it did.
	Stop() bool
}

// realClock is the time package (internal/clock, shared with package pool).
// Inside a testing/synctest bubble it runs on the bubble's fake time.
type realClock = clock.Real[Timer]

// sinceEpoch is c's time as an offset from epoch, a time c returned
// earlier. On the real clock it reads only the monotonic clock (time.Since),
// half the cost of time.Now on machines where reading the time is slow.
func sinceEpoch(c Clock, epoch time.Time) time.Duration { return clock.Since[Timer](c, epoch) }

// Option configures a Semaphore (New) at construction; package pool has its
// own.
type Option interface{ apply(*options) }

type options struct {
	clock Clock
}

// newOptions applies opts over the defaults for the bulkhead named name,
// which New has already checked to be non-empty. A nil option fails it,
// named by its index in opts.
func newOptions(name string, opts []Option) (options, error) {
	o := options{clock: realClock{}}
	for i, opt := range opts {
		if opt == nil {
			return o, fmt.Errorf("bulkhead %q: opts[%d] must not be nil", name, i)
		}
		opt.apply(&o)
	}
	if o.clock == nil {
		return o, fmt.Errorf("bulkhead %q: WithClock: clock must not be nil", name)
	}
	return o, nil
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithClock makes the Semaphore read time from c. The default is the
// real clock, which testing/synctest virtualises inside a bubble. A nil c
// makes New fail.
func WithClock(c Clock) Option {
	return optionFunc(func(o *options) { o.clock = c })
}
