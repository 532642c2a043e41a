package rxpermit

import (
	"context"
	"sync"
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
//	                       the delivery to a new goroutine (or to the parked
//	                       goroutine of a chained observation, via wake)
//	waiting  -> withdrawn  the context ended first: withdraw (or the parked
//	                       goroutine of a chained observation) disposes
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
//   - begin runs on the goroutine that has the consumer's context: the
//     caller of Observe (no options), the goroutine rxgo.Defer starts
//     (options, or a chained observation). While the permit is pending no
//     goroutine belongs to the subscription, except the parked Defer
//     goroutine of a chained observation.
//   - Granted and Rejected run on the goroutine that decided (begin's
//     inside Start, or the one that gave a permit back, or the bulkhead's
//     timer); they only record the outcome and, if begin has returned,
//     start the delivery on a new goroutine, so that no user code (the
//     source's Observe) runs on a goroutine that merely released a permit.
//   - deliver (pump or the rejection item) runs on one goroutine; it alone
//     calls SetUpstream and the Guard's MarkRan and Complete, and it ends
//     the subscription (end) when it returns.
//   - withdraw runs on the goroutine context.AfterFunc starts when the
//     consumer's context ends; it withdraws a pending request.
//
// Permit ownership: the Disposable owns the request while pending and the
// Guard owns the permit once granted. Every path after a grant ends with
// exactly one effective release: Complete when the source closes, errs or
// (first) delivers its item, Dispose when the consumer goes away (the
// Guard's Release: FinishCall if an item was received, ReleasePermission if
// not). The Guard makes any second release a no-op.
type subscription struct {
	permit.Disposable
	o *observation

	// mu is held by observe while it sets the outputs, so that the
	// producer rxgo.Defer runs sees them (observations with options).
	mu  sync.Mutex
	ctx context.Context // the consumer's; set before begin

	out chan<- rxgo.Item // the consumer's channel; nil when discarding (Run)
	// ch is out when the subscription made it, and end closes it; nil for
	// a chained observation (rxgo.Defer closes its channel when run
	// returns) and for Run.
	ch   chan rxgo.Item
	done chan struct{} // Run's Disposed, closed by end; nil otherwise

	stop  func() bool   // unregisters withdraw from the context; nil if none
	wake  chan struct{} // chained observation: its parked goroutine waits here
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
	if s.wake == nil && s.ctx.Done() != nil {
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
	if s.wake != nil {
		s.wake <- struct{}{} // one slot, one send
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
	} else {
		s.pump(s.guard)
	}
	s.end()
}

// reject passes the rejection to the consumer as one error item.
func (s *subscription) reject() {
	if s.out != nil {
		rxgo.Error(s.err).SendContext(s.ctx, s.out)
	}
}

// pump observes the source with a context that ends with the observation
// and forwards its items (see the permit ownership rules on subscription).
// A context that never ends (context.Background(), no options) needs no
// select: items are received and sent with plain channel operations.
func (s *subscription) pump(g *permit.Guard) {
	in, cancel := s.subscribe()
	defer cancel()
	if in == nil {
		return // disposed meanwhile: the Disposable gave the permit back
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
		if s.o.first || item.Error() {
			// The last item: the permit comes back before the consumer
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

// subscribe observes the source with a context of its own and hands its
// cancel func to the Disposable; in is nil if the subscription was
// disposed meanwhile (the source is cancelled then). It is a function of
// its own to keep pump's frame small: the pumping goroutine starts with a
// small stack, and growing it costs more than the rest of a short
// observation.
//
//go:noinline
func (s *subscription) subscribe() (in <-chan rxgo.Item, cancel context.CancelFunc) {
	srcCtx, cancel := context.WithCancel(s.ctx)
	in = s.o.src.Observe(rxgo.WithContext(srcCtx))
	if !s.SetUpstream(cancel) {
		return nil, cancel
	}
	return in, cancel
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
