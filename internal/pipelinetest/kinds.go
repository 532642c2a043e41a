package pipelinetest

import (
	"context"
	"sync/atomic"

	"github.com/reactivex/rxgo/v2"

	"github.com/rxbulkhead/bulkhead/completable"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/operator"
)

// Kind is one pipeline type as the table applies it.
type Kind struct {
	Name string
	// HasValues: a value can be delivered (all but Completable).
	HasValues bool
	// AlwaysEnds: the consumer sees an end signal after a cancellation too
	// (rxgo has one, the channel closing, for completion and cancellation
	// alike); otherwise a cancelled subscription is not signalled.
	AlwaysEnds bool
	// Start subscribes the source the Kind builds from s, wrapped by op.
	Start func(op operator.Op, s *Script) Run
}

// CoreKinds returns the five operators of the core module, applied through
// package operator.
func CoreKinds() []Kind {
	return []Kind{
		{"Observable", true, true, func(op operator.Op, s *Script) Run { return observe(op.Observable(s.observable())) }},
		{"Single", true, true, func(op operator.Op, s *Script) Run { return observe(op.Single(coldSingle{s.observable()})) }},
		{"Maybe", true, true, func(op operator.Op, s *Script) Run { return observe(op.Maybe(coldMaybe{s.observable()})) }},
		{"Completable", false, false, func(op operator.Op, s *Script) Run {
			return subscribeCompletable(op.Completable(s.completable()))
		}},
		{"Flowable", true, false, func(op operator.Op, s *Script) Run {
			return subscribeFlowable(operator.Flowable(op, s.publisher()))
		}},
	}
}

// producer is the script as an rxgo producer.
func (s *Script) producer(ctx context.Context, next chan<- rxgo.Item) {
	s.Subscribed()
	if s.Value && !rxgo.Of(1).SendContext(ctx, next) {
		s.Cancelled()
		return
	}
	if s.Hold {
		s.hold(ctx)
		return
	}
	if s.Err != nil {
		rxgo.Error(s.Err).SendContext(ctx, next)
	}
}

func (s *Script) observable() rxgo.Observable { return rxgo.Defer([]rxgo.Producer{s.producer}) }

// completable ignores Value: a Completable has none.
func (s *Script) completable() completable.Completable {
	return completable.FromFunc(func(ctx context.Context) error {
		s.Subscribed()
		if s.Hold {
			s.hold(ctx)
			return ctx.Err()
		}
		return s.Err
	})
}

func (s *Script) publisher() flowable.Publisher[int] {
	return flowable.Create(func(e flowable.Emitter[int]) {
		s.Subscribed()
		go func() {
			if s.Value && !e.Next(1) {
				s.Cancelled()
				return
			}
			if s.Hold {
				<-e.Done()
				s.Cancelled()
				return
			}
			if s.Err != nil {
				e.Error(s.Err)
			} else {
				e.Complete()
			}
		}()
	})
}

const notUsed = "pipelinetest: not used by the operator"

// coldSingle is an rxgo.Single whose every Observe observes obs afresh (the
// operator only calls Observe).
type coldSingle struct{ obs rxgo.Observable }

func (c coldSingle) Observe(opts ...rxgo.Option) <-chan rxgo.Item            { return c.obs.Observe(opts...) }
func (coldSingle) Filter(rxgo.Predicate, ...rxgo.Option) rxgo.OptionalSingle { panic(notUsed) }
func (coldSingle) Get(...rxgo.Option) (rxgo.Item, error)                     { panic(notUsed) }
func (coldSingle) Map(rxgo.Func, ...rxgo.Option) rxgo.Single                 { panic(notUsed) }
func (coldSingle) Run(...rxgo.Option) rxgo.Disposed                          { panic(notUsed) }

// coldMaybe is the rxgo.OptionalSingle counterpart of coldSingle.
type coldMaybe struct{ obs rxgo.Observable }

func (c coldMaybe) Observe(opts ...rxgo.Option) <-chan rxgo.Item    { return c.obs.Observe(opts...) }
func (coldMaybe) Get(...rxgo.Option) (rxgo.Item, error)             { panic(notUsed) }
func (coldMaybe) Map(rxgo.Func, ...rxgo.Option) rxgo.OptionalSingle { panic(notUsed) }
func (coldMaybe) Run(...rxgo.Option) rxgo.Disposed                  { panic(notUsed) }

// rxRun observes an rxgo Observable, Single or OptionalSingle with a
// context it cancels on Cancel, and drains the channel until it closes.
type rxRun struct {
	Record
	stop context.CancelFunc
}

func observe(src rxgo.Iterable) Run {
	ctx, cancel := context.WithCancel(context.Background())
	r := &rxRun{stop: cancel}
	ch := src.Observe(rxgo.WithContext(ctx))
	go func() {
		var err error
		for it := range ch {
			if it.E != nil {
				err = it.E
			} else {
				r.Value()
			}
		}
		r.End(err)
		cancel()
	}()
	return r
}

func (r *rxRun) Cancel() { r.stop() }

// completableRun subscribes a Completable.
type completableRun struct {
	Record
	d atomic.Pointer[completable.Disposable]
}

func subscribeCompletable(c completable.Completable) Run {
	r := &completableRun{}
	c.Subscribe(r)
	return r
}

func (r *completableRun) OnSubscribe(d completable.Disposable) { r.d.Store(&d) }
func (r *completableRun) OnComplete()                          { r.End(nil) }
func (r *completableRun) OnError(err error)                    { r.End(err) }
func (r *completableRun) Cancel()                              { (*r.d.Load()).Dispose() }

// flowableRun subscribes a Publisher with unbounded demand.
type flowableRun struct {
	Record
	s atomic.Pointer[flowable.Subscription]
}

func subscribeFlowable(p flowable.Publisher[int]) Run {
	r := &flowableRun{}
	p.Subscribe(flowable.Funcs[int]{
		Start:    func(s flowable.Subscription) { r.s.Store(&s); s.Request(flowable.Unbounded) },
		Next:     func(int) { r.Value() },
		Error:    func(err error) { r.End(err) },
		Complete: func() { r.End(nil) },
	})
	return r
}

func (r *flowableRun) Cancel() { (*r.s.Load()).Cancel() }
