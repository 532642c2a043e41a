package rxpermit

import (
	"context"

	"github.com/reactivex/rxgo/v2"
)

// single is an rxgo.Single over a deferred Observable: every Observe, Get
// and Run observes obs afresh, so it can be observed any number of times
// (rxgo's operator-made Singles share one channel and cannot).
type single struct{ obs rxgo.Observable }

// SingleOf returns a Single over obs that observes obs afresh each time; obs
// must be deferred (cold), e.g. made with rxgo.Defer, and emit at most one
// item per observation.
func SingleOf(obs rxgo.Observable) rxgo.Single { return &single{obs: obs} }

// Observe starts an observation and returns its channel.
func (s *single) Observe(opts ...rxgo.Option) <-chan rxgo.Item { return s.obs.Observe(opts...) }

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
	it, _, err := get(s.obs, opts)
	return it, err
}

// Run observes once and discards the item; the returned channel closes when
// the observation ends or the context of opts ends.
func (s *single) Run(opts ...rxgo.Option) rxgo.Disposed { return s.obs.Run(opts...) }

// optional is an rxgo.OptionalSingle over a deferred Observable; like
// single, it observes obs afresh every time.
type optional struct{ obs rxgo.Observable }

// Observe starts an observation and returns its channel.
func (o *optional) Observe(opts ...rxgo.Option) <-chan rxgo.Item { return o.obs.Observe(opts...) }

// Map returns an OptionalSingle of apply's result (empty if o is empty); it
// too can be observed many times.
func (o *optional) Map(apply rxgo.Func, opts ...rxgo.Option) rxgo.OptionalSingle {
	return &optional{obs: o.obs.Map(apply, opts...)}
}

// Get is single.Get, except that it returns rxgo.OptionalSingleEmpty (and a
// nil error) when the observation closes without an item.
func (o *optional) Get(opts ...rxgo.Option) (rxgo.Item, error) {
	it, ok, err := get(o.obs, opts)
	if !ok && err == nil {
		return rxgo.OptionalSingleEmpty, nil
	}
	return it, err
}

// Run observes once and discards the item; the returned channel closes when
// the observation ends or the context of opts ends.
func (o *optional) Run(opts ...rxgo.Option) rxgo.Disposed { return o.obs.Run(opts...) }

// get observes obs once with the options of a Get call and returns its
// first item (ok), or ok == false and the error of the options' context if
// that context ended first, or ok == false and a nil error if obs closed
// empty. Options are opaque outside rxgo, so the context they carry is
// learned the only way rxgo allows: from a deferred producer, on the
// goroutine rxgo starts for it.
func get(obs rxgo.Observable, opts []rxgo.Option) (rxgo.Item, bool, error) {
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
