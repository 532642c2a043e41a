// Package permit connects a subscriber to a bulkhead permit that is acquired
// asynchronously. It is shared by the reactive operators (flowable,
// observable, single, maybe, completable).
//
// # Guard
//
// A [Guard] owns one granted permit and gives it back exactly once: the
// first of [Guard.Complete] (FinishCall: the call ran to its end) or
// [Guard.Release] (FinishCall if [Guard.MarkRan] was called, because the
// call delivered something; ReleasePermission otherwise) wins, every later
// call is a no-op. Operators (or a source fused with the flowable operator)
// call MarkRan when they deliver an element or a value, Complete when the
// source terminates (success or error), and the subscription's
// Cancel/Dispose calls Release.
//
// # The state machine
//
// [Disposable] (the PermissionAwaitingDisposable of Observable, Single,
// Maybe, Completable) and [Subscription] (the PermissionAwaitingSubscription
// of Flowable) share one state machine:
//
//	pending --grant--> granted --SetUpstream--> active
//	   |                  |                       |
//	   +--reject--> rejected                      |
//	   +------------------+----Cancel/Dispose-----+--> cancelled
//
// Every transition is one CAS on one state word; in particular a grant and a
// cancellation race through the CAS pending -> granted | cancelled:
//
//   - Cancel wins: the acquisition is withdrawn (bulkhead.Acquisition.Cancel;
//     no permit consumed, no CallRejected event). If the bulkhead had granted
//     the permit already, the grant callback loses the CAS and gives the
//     permit back with ReleasePermission; the source is never subscribed.
//   - The grant wins: the Guard is armed and [Handler.Granted] subscribes
//     the source, then passes the upstream handle to SetUpstream. A Cancel
//     that arrives before SetUpstream is honoured by SetUpstream, which
//     cancels the upstream; one that arrives later cancels it directly.
//     Either way the upstream is cancelled exactly once and the permit is
//     given back by the Guard's rules.
//   - A rejection (*bulkhead.FullError: no wait, queue full, wait timeout,
//     evicted) calls [Handler.Rejected]; no permit is held.
//
// # Usage
//
// An operator embeds a Disposable or Subscription in its subscriber (the
// zero value is ready), implements [Handler], and calls Start with the
// bulkhead. Start never blocks; Handler methods run on the goroutine that
// decides the outcome (the caller of Start when the bulkhead answers at
// once, otherwise the goroutine of the grant or of the expiry timer), never
// under a lock:
//
//	type op struct {
//		permit.Disposable
//		guard *permit.Guard
//		...
//	}
//	func (o *op) Granted(g *permit.Guard) {
//		o.guard = g
//		ctx, cancel := context.WithCancel(context.Background())
//		o.SetUpstream(cancel)
//		go consume(o.src.Observe(rxgo.WithContext(ctx))) // MarkRan, then g.Complete at the end
//	}
//	func (o *op) Rejected(err error) { o.downstream.Error(err) }
//
// A Subscription additionally buffers demand while pending (one atomic
// word, saturating at math.MaxInt64) and replays it in one Request when
// SetUpstream connects the source; every Request to the upstream goes
// through one drain loop, so Requests never overlap, while Cancel reaches
// the upstream at once (also from inside OnNext, so a synchronous source
// stops emitting) and exactly once. Request and Cancel may be called before
// Start (from the subscriber's OnSubscribe, which the operator calls before
// Start so that no signal can precede it).
// Request(n <= 0) while pending withdraws the acquisition and reports an
// error matching [ErrNonPositiveRequest] through Handler.Rejected; once
// granted it is forwarded so that the source signals the error itself. A
// panic that unwinds through a Request the Subscription made to the upstream
// (a synchronous source whose subscriber panicked) cancels the Subscription,
// so the permit is given back, before it goes on.
//
// Nothing in this package starts a goroutine or parks one.
package permit
