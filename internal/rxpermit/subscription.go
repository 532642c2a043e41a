package rxpermit

import (
	"context"
	"sync/atomic"

	"github.com/reactivex/rxgo/v2"

	"github.com/rxbulkhead/bulkhead/internal/permit"
)

// Phases of a subscription (subscription.phase). They say who delivers the
// outcome of the permit request, so that exactly one goroutine does:
//
//	starting -> decided    Granted/Rejected ran inside Start: begin's caller delivers
//	starting -> waiting    Start returned pending
//	starting -> withdrawn  the context ended inside Start: begin disposes
//	                       and ends it once Start returns
//	waiting  -> decided    Granted/Rejected ran later: that goroutine hands
//	                       the delivery to a new goroutine
//	waiting  -> withdrawn  the context ended first: withdraw disposes
//	                       and ends it
//
// Each transition is one CAS; decided and withdrawn are final.
const (
	phaseStarting uint32 = iota
	phaseWaiting
	phaseDecided
	phaseWithdrawn
)

// subscription is one observation. Its permit.Disposable holds the acquire
// / withdraw / release state machine; the phase word decides who delivers
// the outcome.
//
// Goroutines and ownership:
//   - begin runs on the goroutine that called Observe or Run (the caller's,
//     or that of the chained rxgo operator that observes us). While the
//     permit is pending no goroutine belongs to the subscription.
//   - Granted and Rejected run on the goroutine that decided (begin's
//     inside Start, or the one that gave a permit back, or the bulkhead's
//     timer); they only record the outcome and, if begin has returned,
//     start the delivery on a new goroutine, so that no user code (the
//     source's Observe) runs on a goroutine that merely released a permit.
//   - Decided inside Start, the caller of Observe subscribes the source
//     (subscribe) and starts the goroutine that forwards its items.
//   - deliver and forward (pump or the rejection item) run on one
//     goroutine; it alone calls the Guard's MarkRan and Complete, and it
//     ends the subscription (end) when it returns.
//   - withdraw runs on the goroutine context.AfterFunc starts when the
//     consumer's context ends; it withdraws a pending request.
//
// Permit ownership: the Disposable owns the request while pending and the
// Guard owns the permit once granted. Every path after a grant ends with
// exactly one effective release: Complete when the source closes or
// (first) delivers its item, Dispose when the consumer's context ends (the
// Guard's Release: FinishCall if an item was received, ReleasePermission if
// not). The Guard makes any second release a no-op.
type subscription struct {
	permit.Disposable
	o *observation

	ctx  context.Context // the consumer's; set before begin
	opts []rxgo.Option   // the operator's and the observation's, passed on to the source

	out  chan<- rxgo.Item // the consumer's channel; nil when discarding (Run)
	ch   chan rxgo.Item   // out, which end closes; nil for Run
	done chan struct{}    // Run's Disposed, closed by end; nil otherwise

	stop  func() bool // unregisters withdraw from the context; nil if none
	phase atomic.Uint32
	guard *permit.Guard // written by Granted before its phase CAS
	err   error         // written by Rejected before its phase CAS
}

var _ permit.Handler = (*subscription)(nil)

// outputs makes the channel Observe returns (capacity capacity) or, when
// discarding, the channel Run returns.
func (s *subscription) outputs(capacity int, discard bool) {
	if discard {
		s.done = make(chan struct{})
		return
	}
	s.ch = make(chan rxgo.Item, capacity)
	s.out = s.ch
}

// Outcomes of begin: what its caller does next.
const (
	beginPending = iota // the request is pending: the outcome arrives later
	beginDeliver        // decided inside Start: the caller delivers it (deliver)
	beginEnded          // nothing to deliver: the subscription has ended
)

// begin requests the permit and reports what the caller does next. The
// caller delivers a decided outcome on a goroutine it may keep for the
// whole observation (its own, for the goroutine rxgo.Defer started, or a
// new one); begin returns first so that the delivering goroutine's stack
// starts shallow.
func (s *subscription) begin() int {
	if s.ctx.Err() != nil {
		s.end() // the consumer is gone already: ask for nothing
		return beginEnded
	}
	if s.ctx.Done() != nil {
		// Registered before Start so that stop is set before any other
		// goroutine can read it. For a context of the standard library
		// this starts no goroutine until the context ends.
		s.stop = context.AfterFunc(s.ctx, s.withdraw)
	}
	s.Start(s.o.b, s)
	if s.phase.CompareAndSwap(phaseStarting, phaseWaiting) {
		return beginPending
	}
	if s.phase.Load() == phaseDecided {
		return beginDeliver
	}
	s.Dispose() // withdrawn inside Start
	s.end()
	return beginEnded
}

// Granted records the permit's Guard; see decided.
func (s *subscription) Granted(g *permit.Guard) {
	s.guard = g
	s.decided()
}

// Rejected records the rejection; see decided.
func (s *subscription) Rejected(err error) {
	s.err = err
	s.decided()
}

// decided hands the recorded outcome to whoever delivers it (see the
// phases). If the context ended first (withdrawn), nothing is delivered:
// the withdrawing side's Dispose gives back a permit granted meanwhile.
func (s *subscription) decided() {
	if s.phase.CompareAndSwap(phaseStarting, phaseDecided) {
		return // begin's caller delivers once Start returns
	}
	if !s.phase.CompareAndSwap(phaseWaiting, phaseDecided) {
		return
	}
	go s.deliver()
}

// withdraw runs when the consumer's context ends (context.AfterFunc). The
// phase CAS decides who finishes the subscription, so that the channel
// closes only after the permit's fate is settled: while pending, withdraw
// does (Dispose withdraws the request or gives back a permit granted
// concurrently; a Granted or Rejected that loses the CAS delivers
// nothing); inside Start, begin does once Start returns; once decided, the
// delivery does, as it notices the context's end.
func (s *subscription) withdraw() {
	if s.phase.CompareAndSwap(phaseStarting, phaseWithdrawn) {
		return
	}
	if s.phase.CompareAndSwap(phaseWaiting, phaseWithdrawn) {
		s.Dispose()
		s.end()
	}
}

// end closes the consumer's channel and unregisters withdraw. It runs once,
// on the goroutine that finished the subscription.
func (s *subscription) end() {
	if s.stop != nil {
		s.stop()
	}
	switch {
	case s.done != nil:
		close(s.done)
	case s.ch != nil:
		close(s.ch)
	}
}

// deliver delivers the decided outcome and ends the subscription.
func (s *subscription) deliver() {
	if s.guard == nil {
		s.reject()
		s.end()
		return
	}
	s.forward(s.subscribe())
}

// forward pumps the subscribed source (ok false: disposed meanwhile, the
// Disposable gave the permit back) and ends the subscription.
//
// A source that returned a nil channel was asked to connect (rxgo's
// Connect, propagated by a chained operator as an option): the context it
// was given is its shared emission's, so it is left to end with the
// consumer's (the Connect's), not cancelled here.
func (s *subscription) forward(in <-chan rxgo.Item, cancel context.CancelFunc, ok bool) {
	if ok {
		s.pump(s.guard, in, cancel)
	}
	if in != nil || !ok {
		cancel()
	}
	s.end()
}

// reject passes the rejection to the consumer as one error item.
func (s *subscription) reject() {
	if s.out != nil {
		rxgo.Error(s.err).SendContext(s.ctx, s.out)
	}
}

// pump forwards the items of in, the subscribed source, error items
// included: whether an error item ends the stream is the consumer's choice
// (rxgo's error strategies, OnErrorReturn, ...), as without the bulkhead.
// The permit goes back with Complete when in closes (or, first, with its
// first item, before the consumer receives it) and with Dispose when the
// consumer's context ends. A context that never ends (context.Background(),
// no options) needs no select: items are received and sent with plain
// channel operations. A source that returned a nil channel (a Connect
// passed on by a chained operator) has nothing to forward.
func (s *subscription) pump(g *permit.Guard, in <-chan rxgo.Item, cancel context.CancelFunc) {
	if in == nil {
		g.Complete()
		return
	}
	done := s.ctx.Done()
	for {
		var (
			item rxgo.Item
			ok   bool
		)
		if done == nil {
			item, ok = <-in
		} else {
			select {
			case <-done:
				s.Dispose() // cancels the source, releases the permit
				return
			case item, ok = <-in:
			}
		}
		if !ok {
			g.Complete()
			return
		}
		g.MarkRan()
		if s.o.first {
			// The only item: the permit comes back before the consumer
			// receives it.
			cancel()
			g.Complete()
			s.send(item, done)
			return
		}
		if !s.send(item, done) {
			s.Dispose()
			return
		}
	}
}

// subscribe observes the source with the observation's options, as an
// rxgo operator observes its source with the options it propagates, and
// hands the func that cancels it to the Disposable; ok is false if the
// subscription was disposed meanwhile (the source is cancelled then).
//
// If the consumer's context can end, the source is observed with a child
// of it, which the subscription cancels when it ends (replacing a context
// the source was built with, as a context given downstream does in rxgo).
// If it cannot (no context given), the source keeps its own: cancelling
// the context the source was built with ends the source, and with it the
// observation. cancel is then a no-op.
//
// It is a function of its own to keep pump's frame small: the pumping
// goroutine starts with a small stack, and growing it costs more than the
// rest of a short observation.
//
//go:noinline
func (s *subscription) subscribe() (in <-chan rxgo.Item, cancel context.CancelFunc, ok bool) {
	opts := s.opts
	cancel = noCancel
	if s.ctx.Done() != nil {
		var srcCtx context.Context
		srcCtx, cancel = context.WithCancel(s.ctx)
		opts = append(opts[:len(opts):len(opts)], rxgo.WithContext(srcCtx))
	}
	in = s.o.src.Observe(opts...)
	return in, cancel, s.SetUpstream(cancel)
}

func noCancel() {}

// subscribeOnCaller is subscribe on the goroutine that called Observe: if
// the source's Observe panics there, the caller may recover, so the permit
// is given back (ReleasePermission: nothing ran) and the channel closed
// before the panic goes on.
func (s *subscription) subscribeOnCaller() (in <-chan rxgo.Item, cancel context.CancelFunc, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			s.Dispose()
			s.end()
			panic(r)
		}
	}()
	return s.subscribe()
}

// send passes item to the consumer; it reports false if the consumer's
// context ended first (done is its Done channel, nil if it never ends; an
// ended context wins over a ready consumer, as in rxgo's SendContext).
// Run's observations discard items.
func (s *subscription) send(item rxgo.Item, done <-chan struct{}) bool {
	switch {
	case s.out == nil:
		return true
	case done == nil:
		s.out <- item
		return true
	}
	select {
	case <-done:
		return false
	default:
	}
	select {
	case <-done:
		return false
	case s.out <- item:
		return true
	}
}
