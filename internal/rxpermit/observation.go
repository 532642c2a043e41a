package rxpermit

import (
	"context"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/permit"
)

// Observable returns an Observable each observation of which runs src under
// its own permit of b and forwards every item of src (see the package
// documentation for when the permit goes back). An error item ends the
// observation, as under rxgo's default StopOnError. opts apply to every
// observation, before the options given to Observe. b and src must not be
// nil: the operators check them.
func Observable(b bulkhead.Bulkhead, src rxgo.Iterable, opts ...rxgo.Option) rxgo.Observable {
	return deferred(&observation{b: b, src: src}, opts)
}

// Single returns a Single each observation of which runs src under its own
// permit of b and forwards src's first item only, giving the permit back
// when it arrives. It can be observed any number of times. b and src must
// not be nil.
func Single(b bulkhead.Bulkhead, src rxgo.Iterable, opts ...rxgo.Option) rxgo.Single {
	return &single{obs: deferred(&observation{b: b, src: src, first: true}, opts)}
}

// OptionalSingle is Single for a source that may close without an item: Get
// then returns rxgo.OptionalSingleEmpty.
func OptionalSingle(b bulkhead.Bulkhead, src rxgo.Iterable, opts ...rxgo.Option) rxgo.OptionalSingle {
	return &optional{obs: deferred(&observation{b: b, src: src, first: true}, opts)}
}

func deferred(o *observation, opts []rxgo.Option) rxgo.Observable {
	return rxgo.Defer([]rxgo.Producer{o.run}, opts...)
}

// observation is the immutable part shared by all observations of one
// Observable, Single or OptionalSingle.
type observation struct {
	b     bulkhead.Bulkhead
	src   rxgo.Iterable
	first bool // forward src's first item only, then end (Single, OptionalSingle)
}

// subscription is one observation. Its permit.Disposable holds the acquire /
// withdraw / release state machine; run only waits for the outcome and
// forwards items.
//
// Goroutines: run executes on the goroutine rxgo.Defer starts for the
// observation, and it alone calls Dispose, SetUpstream and the Guard's
// MarkRan and Complete. Granted and Rejected may run on another goroutine
// (whichever one the bulkhead grants or rejects on); they only hand the
// outcome to run through the one-slot outcome channel, so no user code (the
// source's Observe) runs on a goroutine that merely released a permit.
type subscription struct {
	permit.Disposable
	outcome chan outcome // one slot: exactly one of Granted or Rejected sends, once
}

type outcome struct {
	guard *permit.Guard // nil when rejected
	err   error
}

func (s *subscription) Granted(g *permit.Guard) { s.outcome <- outcome{guard: g} }
func (s *subscription) Rejected(err error)      { s.outcome <- outcome{err: err} }

var _ permit.Handler = (*subscription)(nil)

// run is the rxgo.Producer of one observation; rxgo closes next when it
// returns. ctx is the consumer's context.
//
// Permit ownership: the Disposable owns the request while it is pending and
// the Guard owns the permit once granted. Every path out of run after a
// grant ends with exactly one effective release: Complete when the source
// closes, errs or (first) delivers its item, Dispose when the consumer goes
// away (the Guard's Release: FinishCall if an item was received,
// ReleasePermission if not). The Guard makes any second release a no-op.
func (o *observation) run(ctx context.Context, next chan<- rxgo.Item) {
	if ctx.Err() != nil {
		return // the consumer is gone already: ask for nothing
	}
	s := &subscription{outcome: make(chan outcome, 1)}
	s.Start(o.b, s)
	var out outcome
	select {
	case out = <-s.outcome:
	case <-ctx.Done():
		// Withdraws a pending request; gives back a permit granted
		// concurrently (the gate's CAS decides).
		s.Dispose()
		return
	}
	if out.err != nil {
		rxgo.Error(out.err).SendContext(ctx, next)
		return
	}
	g := out.guard
	srcCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := o.src.Observe(rxgo.WithContext(srcCtx))
	if !s.SetUpstream(cancel) {
		return // unreachable while run is the only caller of Dispose
	}
	for {
		select {
		case <-ctx.Done():
			s.Dispose() // cancels the source, releases the permit
			return
		case item, ok := <-in:
			if !ok {
				g.Complete()
				return
			}
			g.MarkRan()
			if o.first || item.Error() {
				// The last item: the permit comes back before the
				// consumer receives it.
				cancel()
				g.Complete()
				item.SendContext(ctx, next)
				return
			}
			if !item.SendContext(ctx, next) {
				s.Dispose()
				return
			}
		}
	}
}
