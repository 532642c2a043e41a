package operator_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/reactivex/rxgo/v2"
	"go.uber.org/goleak"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/operator"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errBoom = errors.New("boom")

// newBulkhead returns a Semaphore named "partner" with the permit-leak check
// registered, and a recorder of its events.
func newBulkhead(t testing.TB, cfg bulkhead.Config) (*bulkhead.Semaphore, *testkit.EventLog) {
	t.Helper()
	b, err := bulkhead.New("partner", cfg)
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, b)
	return b, testkit.RecordEvents(t, b)
}

// behaviour is what a script does when subscribed (observed): it emits one
// value (1) if value is set (a Completable has none to emit), then stays
// open until it is cancelled if hold is set, or else fails with err, or
// completes.
type behaviour struct {
	value bool
	hold  bool
	err   error
}

// script is a test source of every type, with the given behaviour, that
// counts its subscriptions.
type script struct {
	behaviour

	subscribed atomic.Int32 // subscriptions (observations) that started
	cancelled  atomic.Int32 // subscriptions that saw their cancellation
}

// producer is the script as an rxgo producer.
func (s *script) producer(ctx context.Context, next chan<- rxgo.Item) {
	s.subscribed.Add(1)
	if s.value && !rxgo.Of(1).SendContext(ctx, next) {
		s.cancelled.Add(1)
		return
	}
	if s.hold {
		<-ctx.Done()
		s.cancelled.Add(1)
		return
	}
	if s.err != nil {
		rxgo.Error(s.err).SendContext(ctx, next)
	}
}

func (s *script) observable() rxgo.Observable {
	return rxgo.Defer([]rxgo.Producer{s.producer})
}

func (s *script) single() rxgo.Single { return coldSingle{s.observable()} }

func (s *script) maybe() rxgo.OptionalSingle { return coldMaybe{s.observable()} }

// completable ignores value: a Completable has none.
func (s *script) completable() completable.Completable {
	return completable.FromFunc(func(ctx context.Context) error {
		s.subscribed.Add(1)
		if s.hold {
			<-ctx.Done()
			s.cancelled.Add(1)
			return ctx.Err()
		}
		return s.err
	})
}

func (s *script) publisher() flowable.Publisher[int] {
	return flowable.Create(func(e flowable.Emitter[int]) {
		s.subscribed.Add(1)
		go func() {
			if s.value && !e.Next(1) {
				s.cancelled.Add(1)
				return
			}
			if s.hold {
				<-e.Done()
				s.cancelled.Add(1)
				return
			}
			if s.err != nil {
				e.Error(s.err)
			} else {
				e.Complete()
			}
		}()
	})
}

// coldSingle is an rxgo.Single whose every Observe observes obs afresh (the
// operator only calls Observe).
type coldSingle struct{ obs rxgo.Observable }

func (c coldSingle) Observe(opts ...rxgo.Option) <-chan rxgo.Item { return c.obs.Observe(opts...) }
func (c coldSingle) Filter(rxgo.Predicate, ...rxgo.Option) rxgo.OptionalSingle {
	panic("not used by the operator")
}
func (c coldSingle) Get(...rxgo.Option) (rxgo.Item, error)     { panic("not used by the operator") }
func (c coldSingle) Map(rxgo.Func, ...rxgo.Option) rxgo.Single { panic("not used by the operator") }
func (c coldSingle) Run(...rxgo.Option) rxgo.Disposed          { panic("not used by the operator") }

// coldMaybe is the rxgo.OptionalSingle counterpart of coldSingle.
type coldMaybe struct{ obs rxgo.Observable }

func (c coldMaybe) Observe(opts ...rxgo.Option) <-chan rxgo.Item { return c.obs.Observe(opts...) }
func (c coldMaybe) Get(...rxgo.Option) (rxgo.Item, error)        { panic("not used by the operator") }
func (c coldMaybe) Map(rxgo.Func, ...rxgo.Option) rxgo.OptionalSingle {
	panic("not used by the operator")
}
func (c coldMaybe) Run(...rxgo.Option) rxgo.Disposed { panic("not used by the operator") }

// run is one subscription (observation) of a wrapped source, whatever its
// type, as the rules table sees it.
type run interface {
	// cancel ends the subscription from the consumer's side: cancels the
	// rxgo context, disposes the Completable, cancels the Flowable.
	cancel()
	// result returns what the consumer received so far: the number of
	// values, the error, and whether the subscription ended (terminal
	// signal, or rxgo channel closed).
	result() (values int, err error, ended bool)
}

// record is the shared bookkeeping of the runs.
type record struct {
	mu     sync.Mutex
	values int
	err    error
	ended  bool
}

func (r *record) result() (int, error, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.values, r.err, r.ended
}

func (r *record) value() {
	r.mu.Lock()
	r.values++
	r.mu.Unlock()
}

func (r *record) end(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.ended = true
	r.mu.Unlock()
}

// rxRun observes an rxgo Observable, Single or OptionalSingle with a
// context it cancels on cancel, and drains the channel until it closes.
type rxRun struct {
	record
	stop context.CancelFunc
}

func observe(src rxgo.Iterable) run {
	ctx, cancel := context.WithCancel(context.Background())
	r := &rxRun{stop: cancel}
	ch := src.Observe(rxgo.WithContext(ctx))
	go func() {
		var err error
		for it := range ch {
			if it.E != nil {
				err = it.E
			} else {
				r.value()
			}
		}
		r.end(err)
		cancel()
	}()
	return r
}

func (r *rxRun) cancel() { r.stop() }

// completableRun subscribes a Completable.
type completableRun struct {
	record
	d atomic.Pointer[completable.Disposable]
}

func subscribeCompletable(c completable.Completable) run {
	r := &completableRun{}
	c.Subscribe(r)
	return r
}

func (r *completableRun) OnSubscribe(d completable.Disposable) { r.d.Store(&d) }
func (r *completableRun) OnComplete()                          { r.end(nil) }
func (r *completableRun) OnError(err error)                    { r.end(err) }
func (r *completableRun) cancel()                              { (*r.d.Load()).Dispose() }

// flowableRun subscribes a Publisher with unbounded demand.
type flowableRun struct {
	record
	s atomic.Pointer[flowable.Subscription]
}

func subscribeFlowable(p flowable.Publisher[int]) run {
	r := &flowableRun{}
	p.Subscribe(flowable.Funcs[int]{
		Start:    func(s flowable.Subscription) { r.s.Store(&s); s.Request(flowable.Unbounded) },
		Next:     func(int) { r.value() },
		Error:    func(err error) { r.end(err) },
		Complete: func() { r.end(nil) },
	})
	return r
}

func (r *flowableRun) cancel() { (*r.s.Load()).Cancel() }

// kind is one of the five types as the facade applies it.
type kind struct {
	name      string
	hasValues bool // a value can be delivered (all but Completable)
	start     func(op operator.Op, s *script) run
}

var kinds = []kind{
	{"Observable", true, func(op operator.Op, s *script) run { return observe(op.Observable(s.observable())) }},
	{"Single", true, func(op operator.Op, s *script) run { return observe(op.Single(s.single())) }},
	{"Maybe", true, func(op operator.Op, s *script) run { return observe(op.Maybe(s.maybe())) }},
	{"Completable", false, func(op operator.Op, s *script) run {
		return subscribeCompletable(op.Completable(s.completable()))
	}},
	{"Flowable", true, func(op operator.Op, s *script) run {
		return subscribeFlowable(operator.Flowable(op, s.publisher()))
	}},
}
