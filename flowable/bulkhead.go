package flowable

import (
	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/nilcheck"
	"github.com/rxbulkhead/bulkhead/internal/permit"
)

// Bulkhead returns a Publisher that subscribes to src only while it holds a
// permit of b. Each subscription acquires its own permit (re-subscribing a
// cold Publisher acquires again) and gives it back exactly once.
//
// Subscribe never blocks and never parks a goroutine. The subscriber first
// receives (OnSubscribe) a subscription that waits for the permit:
//   - granted at once: src is subscribed on the calling goroutine;
//   - rejected at once: OnError(*bulkhead.FullError) follows; src is never
//     subscribed;
//   - pending: Requests are summed (saturating at math.MaxInt64) and
//     replayed in one Request when src is subscribed, on the goroutine that
//     delivers the grant; later Requests go straight to src. Cancel withdraws
//     the acquisition (no permit consumed, src never subscribed). If the wait
//     expires, the subscriber gets OnError(*bulkhead.FullError) with Reason
//     WaitTimeout.
//
// The permit goes back with b.FinishCall when src completes or fails, or
// when the subscriber cancels after at least one element was delivered, and
// with b.ReleasePermission when the subscriber cancels before any element.
// If the subscriber panics in OnNext while src emits synchronously (inside
// Request or Subscribe, as Range, FromSlice and Just do), the subscription
// is cancelled and the permit given back before the panic goes on. A source
// that emits on a goroutine of its own (Create, FromObservable) lets such a
// panic end the program; one that recovers it must cancel or terminate the
// subscription. A runtime.Goexit in OnNext (t.FailNow) ends such a
// goroutine without ending the program: FromObservable and FromPool then
// terminate the subscription with OnError, so the permit goes back; a
// Create producer
// must do the same itself (for example e.Error in a deferred call of its
// goroutine), or the permit stays held. If Subscribe panics because it evicted (LIFO) a waiting
// subscription whose subscriber panicked in OnError, the new subscription
// was withdrawn before the panic went on: it holds no permit, is not
// queued and gets no further signal. Request(n <= 0) while pending withdraws the
// acquisition and signals OnError (matching ErrNonPositiveRequest); once
// src is subscribed it is forwarded to src, which must signal that error
// itself (rule 3.9). Requests are forwarded serially: one made inside
// OnNext reaches src when the Request that src is serving returns, so a
// synchronous src delivers the rest of that demand first (and completes
// without the error if it runs out meanwhile). Signals to the subscriber
// are serial (rule 1.3).
//
// Elements pass through without touching the bulkhead. When src is one of
// this package's synchronous sources (Range, FromSlice, Just), the operator
// is fused with it: src delivers elements straight to the subscriber and the
// operator only takes part in Subscribe, Request, Cancel and termination, so
// an element costs what it costs without Bulkhead. Any other Publisher is
// subscribed through a Subscriber of the operator's, which adds one call per
// element. Both behave as described above. Bulkhead panics if b or src is
// nil.
func Bulkhead[T any](b bulkhead.Bulkhead, src Publisher[T]) Publisher[T] {
	if nilcheck.Is(b) {
		panic("flowable: Bulkhead called with a nil bulkhead.Bulkhead")
	}
	if src == nil {
		panic("flowable: Bulkhead called with a nil Publisher")
	}
	p := &bulkheadPublisher[T]{b: b, src: src}
	p.fused, _ = src.(fuseable[T])
	return p
}

type bulkheadPublisher[T any] struct {
	b     bulkhead.Bulkhead
	src   Publisher[T]
	fused fuseable[T] // src, if it is fuseable; nil otherwise
}

// Subscribe hands s the waiting subscription, then requests the permit, so
// that OnSubscribe happens before any other signal whichever goroutine
// delivers the outcome.
func (p *bulkheadPublisher[T]) Subscribe(s Subscriber[T]) {
	if s == nil {
		panic("flowable: Subscribe called with a nil Subscriber (rule 1.9)")
	}
	o := &bulkheadSubscriber[T]{down: s, pub: p}
	s.OnSubscribe(o)
	o.Start(p.b, o)
}

// bulkheadSubscriber is, at once, the subscription the downstream holds
// (the embedded permit.Subscription: a PermissionAwaitingSubscription), the
// permit.Handler that learns the outcome of the acquisition, and the
// Subscriber of src.
//
// Signals to down come from three places that never overlap: Rejected (only
// if the acquisition is rejected, decided by the gate's CAS, so src is never
// subscribed), and src's own serial signals (src is subscribed only after
// the grant won the same CAS). OnSubscribe precedes them all because the
// permit is requested after it returned.
//
// Two paths, chosen once per Bulkhead call:
//   - foreign src: src signals o, whose OnNext, OnError and OnComplete mark
//     the call as run, give the permit back and pass the signal on;
//   - fuseable src (see fuseable): src hands its subscription to
//     o.OnSubscribe but signals down directly and drives the Guard itself;
//     o's OnNext, OnError and OnComplete are never called, and ran stays
//     false.
//
// On both paths the downstream's Request and Cancel go through the embedded
// permit.Subscription, whose drain loop is the only caller of src's Request
// and Cancel, so a panic in down.OnNext unwinds through the drain (or through
// Granted) and gives the permit back on both.
type bulkheadSubscriber[T any] struct {
	permit.Subscription
	down  Subscriber[T]
	pub   *bulkheadPublisher[T]
	guard *permit.Guard // set by Granted before src is subscribed
	ran   bool          // an element was delivered; owned by src's signals
}

// Granted runs on the goroutine that decided the grant and subscribes src
// (fused with the operator if src is fuseable). If subscribing panics (src
// itself, or the subscriber's OnNext while the buffered demand is replayed),
// the subscription is cancelled so that the permit goes back, and the panic
// goes on.
func (o *bulkheadSubscriber[T]) Granted(g *permit.Guard) {
	o.guard = g
	ok := false
	defer func() {
		if !ok {
			o.Cancel()
		}
	}()
	if f := o.pub.fused; f != nil {
		f.subscribeFused(o, o.down, g)
	} else {
		o.pub.src.Subscribe(o)
	}
	ok = true
}

// Rejected runs when src will never be subscribed.
func (o *bulkheadSubscriber[T]) Rejected(err error) { o.down.OnError(err) }

// OnSubscribe connects src's subscription and replays pending demand; a
// fuseable src calls it too.
func (o *bulkheadSubscriber[T]) OnSubscribe(up Subscription) { o.SetUpstream(up) }

// OnNext (foreign src only) marks the call as run (on the first element)
// and passes v on: an element costs a call and a plain field check, no
// atomic operation and no defer. A panic in down.OnNext is handled where it
// unwinds through the operator (the Request drain loop of
// permit.Subscription, or Granted while src is being subscribed): the
// subscription is cancelled and the permit given back before the panic goes
// on.
func (o *bulkheadSubscriber[T]) OnNext(v T) {
	if !o.ran {
		o.markRan()
	}
	o.down.OnNext(v)
}

func (o *bulkheadSubscriber[T]) markRan() {
	o.ran = true
	o.guard.MarkRan()
}

// OnError (foreign src only) gives the permit back (FinishCall: the call
// ran) before passing err on, so a subscriber that retries finds it free.
func (o *bulkheadSubscriber[T]) OnError(err error) {
	o.guard.Complete()
	o.down.OnError(err)
}

// OnComplete (foreign src only) gives the permit back, then completes down.
func (o *bulkheadSubscriber[T]) OnComplete() {
	o.guard.Complete()
	o.down.OnComplete()
}

// The downstream's Request and Cancel are the embedded permit.Subscription's.
var (
	_ Subscription    = (*bulkheadSubscriber[int])(nil)
	_ Subscriber[int] = (*bulkheadSubscriber[int])(nil)
	_ permit.Handler  = (*bulkheadSubscriber[int])(nil)
)
