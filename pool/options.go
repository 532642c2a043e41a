package pool

import (
	"errors"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/clock"
)

// Option configures a Pool at construction (New). An Option is also a
// RegistryOption: given to NewRegistry, it applies to every Pool the
// Registry creates.
type Option interface {
	RegistryOption
	applyPool(*options)
}

type options struct {
	clock           bulkhead.Clock
	onCallbackPanic func(value any, stack []byte)
}

// newOptions applies opts over the defaults.
func newOptions(opts []Option) (options, error) {
	o := options{clock: clock.Real[bulkhead.Timer]{}}
	for _, opt := range opts {
		opt.applyPool(&o)
	}
	if o.clock == nil {
		return o, errors.New("WithClock: clock must not be nil")
	}
	return o, nil
}

type optionFunc func(*options)

func (f optionFunc) applyPool(o *options) { f(o) }

func (f optionFunc) applyRegistry(r *Registry) { r.opts = append(r.opts, f) }

// WithClock makes the Pool read time from c: KeepAlive and MaxQueueWait
// are measured on it and events are stamped with it. The default is the
// real clock, which testing/synctest virtualises inside a bubble. A nil c
// makes New (and NewRegistry) fail.
func WithClock(c bulkhead.Clock) Option {
	return optionFunc(func(o *options) { o.clock = c })
}

// WithCallbackPanicHandler sets what happens to a panic of a Future.OnDone
// callback that the Pool runs (see Future.OnDone): h is called once per
// panicking callback with the value passed to panic and the stack of the
// callback's goroutine at the panic. It runs on that goroutine (a worker,
// the Clock's timer goroutine, the goroutine context.AfterFunc starts when
// a task's context ends, or the caller of Cancel or Close), after the other
// callbacks of the same decision have run; a worker then takes its next
// task as usual. h must not panic (a panic of h ends the program). If h
// calls runtime.Goexit, its goroutine ends and the remaining panics go to h
// on a new goroutine; a worker is replaced, as for a callback's Goexit.
//
// Without a handler the (first) panic is raised again on a new goroutine,
// so the program ends with the callback's value and stack, as it would for
// a panic on any goroutine; the Pool has finished its own work by then.
// A nil h restores that default.
func WithCallbackPanicHandler(h func(value any, stack []byte)) Option {
	return optionFunc(func(o *options) { o.onCallbackPanic = h })
}
