package rxpermit

import (
	"context"

	"github.com/reactivex/rxgo/v2"
)

// single is an rxgo.Single that observes afresh on every Observe, Get and
// Run, so it can be observed any number of times (rxgo's operator-made
// Singles share one channel and cannot). With o set (the single operator's
// result) Observe, Get and Run start an observation of o, which parks
// nothing while its permit is pending; Map and Filter chain rxgo's
// operators on obs, o's deferred Observable. Without o (SingleOf, or the
// result of Map and Filter) everything observes obs.
type single struct {
	o   *observation
	obs rxgo.Observable
}

// SingleOf returns a Single over obs that observes obs afresh each time; obs
// must be deferred (cold), e.g. made with rxgo.Defer, and emit at most one
// item per observation.
func SingleOf(obs rxgo.Observable) rxgo.Single { return &single{obs: obs} }

// Observe starts an observation and returns its channel.
func (s *single) Observe(opts ...rxgo.Option) <-chan rxgo.Item {
	if s.o != nil {
		return s.o.observe(opts, false).ch
	}
	return s.obs.Observe(opts...)
}

// Map returns a Single of apply's result; it too can be observed many times.
func (s *single) Map(apply rxgo.Func, opts ...rxgo.Option) rxgo.Single {
	return &single{obs: s.obs.Map(apply, opts...)}
}

// Filter returns an OptionalSingle that is empty when pred rejects the value.
func (s *single) Filter(pred rxgo.Predicate, opts ...rxgo.Option) rxgo.OptionalSingle {
	return &optional{obs: s.obs.Filter(pred, opts...)}
}

// Get observes once and blocks until the item arrives (an error item is
// returned as an item, with a nil error, as rxgo does) or the context of
// opts ends (ctx.Err()).
func (s *single) Get(opts ...rxgo.Option) (rxgo.Item, error) {
	it, _, err := get(s.o, s.obs, opts)
	return it, err
}

// Run observes once and discards the item; the returned channel closes when
// the observation ends or the context of opts ends.
func (s *single) Run(opts ...rxgo.Option) rxgo.Disposed {
	if s.o != nil {
		return s.o.observe(opts, true).done
	}
	return s.obs.Run(opts...)
}

// optional is an rxgo.OptionalSingle built like single.
type optional struct {
	o   *observation
	obs rxgo.Observable
}

// Observe starts an observation and returns its channel.
func (o *optional) Observe(opts ...rxgo.Option) <-chan rxgo.Item {
	if o.o != nil {
		return o.o.observe(opts, false).ch
	}
	return o.obs.Observe(opts...)
}

// Map returns an OptionalSingle of apply's result (empty if o is empty); it
// too can be observed many times.
func (o *optional) Map(apply rxgo.Func, opts ...rxgo.Option) rxgo.OptionalSingle {
	return &optional{obs: o.obs.Map(apply, opts...)}
}

// Get is single.Get, except that it returns rxgo.OptionalSingleEmpty (and a
// nil error) when the observation closes without an item.
func (o *optional) Get(opts ...rxgo.Option) (rxgo.Item, error) {
	it, ok, err := get(o.o, o.obs, opts)
	if !ok && err == nil {
		return rxgo.OptionalSingleEmpty, nil
	}
	return it, err
}

// Run observes once and discards the item; the returned channel closes when
// the observation ends or the context of opts ends.
func (o *optional) Run(opts ...rxgo.Option) rxgo.Disposed {
	if o.o != nil {
		return o.o.observe(opts, true).done
	}
	return o.obs.Run(opts...)
}

// get observes once with the options of a Get call and returns the first
// item (ok), or ok == false and the error of the options' context if that
// context ended first, or ok == false and a nil error if the observation
// closed empty.
//
// With o, the observation is ours: it forwards one item at most and ends
// when the context ends, so get reads its channel on the caller's
// goroutine. Without o, obs is any deferred Observable: the context of the
// options is learned the only way rxgo allows, from a deferred producer, on
// the goroutine rxgo starts for it for the duration of the call.
func get(o *observation, obs rxgo.Observable, opts []rxgo.Option) (rxgo.Item, bool, error) {
	if o != nil {
		s := o.observe(opts, false)
		if it, ok := <-s.ch; ok {
			return it, true, nil
		}
		// s.ctx was set before the channel closed.
		return rxgo.Item{}, false, s.ctx.Err()
	}
	var ctxErr error // written before rxgo closes out: read after it closed
	out := rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
		sub, cancel := context.WithCancel(ctx)
		defer cancel() // stops obs after its first item
		select {
		case it, ok := <-obs.Observe(rxgo.WithContext(sub)):
			if ok && it.SendContext(ctx, next) {
				return
			}
		case <-ctx.Done():
		}
		ctxErr = ctx.Err()
	}}).Observe(opts...)
	if it, ok := <-out; ok {
		return it, true, nil
	}
	return rxgo.Item{}, false, ctxErr
}
