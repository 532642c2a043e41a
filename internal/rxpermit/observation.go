package rxpermit

import (
	"context"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// Observable returns an Observable each observation of which runs src under
// its own permit of b and forwards every item of src (see the package
// documentation for when the permit goes back). An error item ends the
// observation, as under rxgo's default StopOnError. opts apply to every
// observation, before the options given to Observe. b and src must not be
// nil: the operators check them.
func Observable(b bulkhead.Bulkhead, src rxgo.Iterable, opts ...rxgo.Option) rxgo.Observable {
	o := &observation{b: b, src: src, opts: opts}
	return &observable{Observable: o.deferred(), o: o}
}

// Single returns a Single each observation of which runs src under its own
// permit of b and forwards src's first item only, giving the permit back
// when it arrives. It can be observed any number of times. b and src must
// not be nil.
func Single(b bulkhead.Bulkhead, src rxgo.Iterable, opts ...rxgo.Option) rxgo.Single {
	o := &observation{b: b, src: src, first: true, opts: opts}
	return &single{o: o, obs: o.deferred()}
}

// OptionalSingle is Single for a source that may close without an item: Get
// then returns rxgo.OptionalSingleEmpty.
func OptionalSingle(b bulkhead.Bulkhead, src rxgo.Iterable, opts ...rxgo.Option) rxgo.OptionalSingle {
	o := &observation{b: b, src: src, first: true, opts: opts}
	return &optional{o: o, obs: o.deferred()}
}

// observation is the immutable part shared by all observations of one
// Observable, Single or OptionalSingle.
type observation struct {
	b     bulkhead.Bulkhead
	src   rxgo.Iterable
	first bool          // forward src's first item only, then end (Single, OptionalSingle)
	opts  []rxgo.Option // the operator's options, before those of each observation
}

// observable is the rxgo.Observable the observable operator returns. Its
// own Observe and Run start an observation that parks nothing while the
// permit is pending (see subscription). Every other method is the embedded
// rxgo.Observable's, built by o.deferred: rxgo's operators (Map, Retry,
// Take, ...) observe the ObservableImpl they are called on, not this
// wrapper, so a chained observation runs on the goroutine rxgo.Defer starts
// for it, which waits there for the permit.
type observable struct {
	rxgo.Observable
	o *observation
}

// Observe starts an observation and returns its channel at once.
func (x *observable) Observe(opts ...rxgo.Option) <-chan rxgo.Item {
	return x.o.observe(opts, false).ch
}

// Run starts an observation that discards the items; the returned channel
// closes when the observation ends (the source ended, the permit was
// rejected, or the context of the options ended).
func (x *observable) Run(opts ...rxgo.Option) rxgo.Disposed {
	return x.o.observe(opts, true).done
}

// observe starts one observation with the options of an Observe, Get or
// Run call, and returns its subscription (whose ch Observe returns, or
// whose done Run returns if discard).
//
// Without options the context is context.Background() and the channel is
// unbuffered, so the permit is requested on the caller's goroutine and no
// goroutine exists until the outcome is known.
//
// With options, rxgo must evaluate them: their struct is unexported, and no
// rxgo function hands the context they build to the caller. rxgo.Defer
// does it as for any deferred Observable: its Observe builds the channel
// (we copy its capacity, honouring WithBufferedChannel) and the context
// (WithContext; the operator's options first, the observation's last) and
// runs our producer with that context on a goroutine it starts. That
// goroutine requests the permit and, granted at once, pumps the source
// itself; pending, it registers the withdrawal with context.AfterFunc and
// returns, so nothing stays parked. rxgo then closes the Defer's own
// channel, which nobody reads.
func (o *observation) observe(opts []rxgo.Option, discard bool) *subscription {
	s := &subscription{o: o}
	if len(o.opts) == 0 && len(opts) == 0 {
		s.ctx = context.Background()
		s.outputs(0, discard)
		if s.begin() == beginDeliver {
			go s.deliver()
		}
		return s
	}
	s.mu.Lock() // the producer waits until the outputs are set
	probe := rxgo.Defer([]rxgo.Producer{s.produce}, o.opts...).Observe(opts...)
	s.outputs(cap(probe), discard)
	s.mu.Unlock()
	return s
}

// produce is the rxgo.Producer of an observation with options; it runs on
// the goroutine rxgo.Defer starts, with the context the options built.
func (s *subscription) produce(ctx context.Context, _ chan<- rxgo.Item) {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	if s.begin() == beginDeliver {
		s.deliver() // granted at once: this goroutine pumps the source
	}
}

// deferred returns the rxgo Observable that chained operators observe: each
// observation runs on the goroutine rxgo.Defer starts and parks there while
// the permit is pending (rxgo's operators cannot observe our own Observe).
func (o *observation) deferred() rxgo.Observable {
	return rxgo.Defer([]rxgo.Producer{o.run}, o.opts...)
}

// run is the rxgo.Producer of a chained observation; rxgo closes next when
// it returns. ctx is the consumer's context.
func (o *observation) run(ctx context.Context, next chan<- rxgo.Item) {
	s := &subscription{o: o, ctx: ctx, out: next, wake: make(chan struct{}, 1)}
	switch s.begin() {
	case beginDeliver:
		s.deliver()
		return
	case beginEnded:
		return
	}
	select {
	case <-s.wake:
	case <-ctx.Done():
		if s.phase.CompareAndSwap(phaseWaiting, phaseWithdrawn) {
			// Withdraws a pending request; gives back a permit granted
			// concurrently (the gate's CAS decides).
			s.Dispose()
			return
		}
		<-s.wake // decided first: the outcome is in the slot; the delivery sees ctx end
	}
	s.deliver()
}
