package rxpermit

import (
	"context"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// Observable returns an Observable each observation of which runs src under
// its own permit of b and forwards every item of src, error items included
// (see the package documentation for when the permit goes back). opts apply
// to every observation, before the options given to Observe, and are passed
// on to src with them. b and src must not be nil: the operators check them.
func Observable(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) rxgo.Observable {
	o := &observation{b: b, src: src, opts: opts}
	return &observable{Observable: chainable(o, src), o: o, src: src}
}

// Single returns a Single each observation of which runs src under its own
// permit of b and forwards src's first item only, giving the permit back
// when it arrives. It can be observed any number of times. b and src must
// not be nil.
func Single(b bulkhead.Bulkhead, src rxgo.Iterable, opts ...rxgo.Option) rxgo.Single {
	o := &observation{b: b, src: src, first: true, opts: opts}
	return &single{o: o, obs: chainable(o, src)}
}

// OptionalSingle is Single for a source that may close without an item: Get
// then returns rxgo.OptionalSingleEmpty.
func OptionalSingle(b bulkhead.Bulkhead, src rxgo.Iterable, opts ...rxgo.Option) rxgo.OptionalSingle {
	o := &observation{b: b, src: src, first: true, opts: opts}
	return &optional{o: o, obs: chainable(o, src)}
}

// observation is the immutable part shared by all observations of one
// Observable, Single or OptionalSingle. It is the rxgo.Iterable inside the
// rxgo.ObservableImpl that chained operators observe (see chainable), so
// that Map, Take, Retry, ... observe it as they would observe src.
type observation struct {
	b     bulkhead.Bulkhead
	src   rxgo.Iterable
	first bool          // forward src's first item only, then end (Single, OptionalSingle)
	opts  []rxgo.Option // the operator's options, before those of each observation
}

var _ rxgo.Iterable = (*observation)(nil)

// Observe starts an observation and returns its channel at once; a chained
// rxgo operator calls it with the options it propagates.
func (o *observation) Observe(opts ...rxgo.Option) <-chan rxgo.Item {
	return o.observe(opts, false).ch
}

// observable is the rxgo.Observable the observable operator returns. Its
// own Observe and Run, and those of every operator chained on it, start an
// observation that parks nothing while the permit is pending (see
// subscription). Connect is forwarded to the source.
type observable struct {
	rxgo.Observable // rxgo's operators over o (chainable)
	o               *observation
	src             rxgo.Observable
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

// Connect connects the source (a Connectable built with
// rxgo.WithPublishStrategy): it starts the source's shared emission, which
// reaches every observation already subscribed. It takes no permit: each
// observation holds its own while it is subscribed.
func (x *observable) Connect(ctx context.Context) (context.Context, rxgo.Disposable) {
	return x.src.Connect(ctx)
}

// observe starts one observation with the options of an Observe, Get or
// Run call (or those a chained operator propagates), and returns its
// subscription (whose ch Observe returns, or whose done Run returns if
// discard).
//
// The options are evaluated first, on the caller's goroutine (see
// evaluate), then the permit is requested. Granted at once, src is
// observed on the caller's goroutine with the options, so that the channel
// returned has the capacity src's channel has, as it would without the
// bulkhead, and a Connectable source has its subscriber before Observe
// returns; a goroutine then forwards the items. Pending, the channel has
// the capacity the options ask for and no goroutine exists until the
// outcome is known.
//
// A Connect on an operator chained after the Observable reaches observe as
// an observation whose options ask to connect (rxgo's Connect observes the
// operator's source with such an option). It is passed on to src at once
// and takes no permit, as Connect on the Observable itself: a connectable
// source starts its shared emission, which reaches every subscribed
// observation under that observation's own permit, and returns no channel,
// which is what observe returns then. Taking a permit for it would ask the
// bulkhead for one more than the subscribers hold, and a full bulkhead
// would reject the Connect and leave them waiting for ever. A source that
// is not connectable ignores the request and starts a run of its own (as
// without the bulkhead): that run's items are forwarded as an
// observation's, under a permit requested as for any observation, but the
// source started before the permit was asked for.
func (o *observation) observe(opts []rxgo.Option, discard bool) *subscription {
	s := &subscription{o: o, ctx: context.Background()}
	capacity := 0
	if len(o.opts)+len(opts) > 0 {
		s.opts = append(o.opts[:len(o.opts):len(o.opts)], opts...)
		var connect bool
		s.ctx, capacity, connect = evaluate(s.opts)
		if connect {
			in := o.src.Observe(s.opts...)
			if in == nil {
				return s // connected: no channel, as rxgo's connectable sources return
			}
			s.o = &observation{b: o.b, src: started(in), first: o.first}
		}
	}
	s.outputs(capacity, discard)
	if s.begin() != beginDeliver {
		return s
	}
	if s.guard == nil {
		go s.deliver() // the rejection item
		return s
	}
	// Decided inside Start: no other goroutine touches s until the
	// forwarding goroutine starts.
	in, cancel, ok := s.subscribeOnCaller()
	if ok && !discard && in != nil && cap(in) != capacity {
		s.outputs(cap(in), false)
	}
	go s.forward(in, cancel, ok)
	return s
}

// evaluate returns the context and the channel capacity that opts build,
// and whether they ask to connect. rxgo's options are opaque (their struct
// is unexported), so a probe evaluates them: a connectable rxgo.FromChannel
// built with opts keeps the context they build as its parent (never nil:
// context.Background() when they give none; read as chainable reads it)
// and, observed, returns nil if they ask to connect (connecting the probe
// starts a goroutine that finds its channel closed and ends) or else a
// channel of the capacity they ask for.
func evaluate(opts []rxgo.Option) (ctx context.Context, capacity int, connect bool) {
	probe := rxgo.FromChannel(closedItems, append(opts[:len(opts):len(opts)], rxgo.WithPublishStrategy())...)
	ch := probe.Observe()
	return parentOf(probe), cap(ch), ch == nil
}

// closedItems is the probe's channel: closed, so a probe that connects
// forwards nothing and ends at once.
var closedItems = func() chan rxgo.Item {
	ch := make(chan rxgo.Item)
	close(ch)
	return ch
}()

// started is a source already observed: its Observe returns the channel of
// that run whatever the options.
type started <-chan rxgo.Item

func (in started) Observe(...rxgo.Option) <-chan rxgo.Item { return in }
