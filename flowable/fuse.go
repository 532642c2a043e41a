package flowable

import "github.com/rxbulkhead/bulkhead/internal/permit"

// fuseable is implemented by the package's synchronous sources (Range,
// FromSlice, Just: pullPublisher) so that the Bulkhead operator can get out
// of their element path. Through a fuseable source, Bulkhead does not
// subscribe as a Subscriber of its own; it asks the source to
//
//   - hand its Subscription to parent.OnSubscribe (the operator, which
//     connects it to the PermissionAwaitingSubscription the downstream
//     already holds: demand replay, Cancel and the rule 3.9 forwarding all
//     keep going through permit.Subscription's drain loop);
//   - signal OnNext, OnError and OnComplete straight to down, the
//     downstream Subscriber: no operator frame per element;
//   - call g.MarkRan before the first OnNext and g.Complete before OnError
//     or OnComplete, from the goroutine that emits (the one that owns the
//     signals), never per element.
//
// Invariants a fuseable source keeps, which are what the operator's
// wrapping Subscriber guarantees for a foreign Publisher:
//
//   - termination: the permit is given back (g.Complete) before down sees
//     OnError or OnComplete, so a subscriber that resubscribes from there
//     finds it free;
//   - release rule: g.MarkRan happens before the first OnNext, so a Cancel
//     from that OnNext or later gives the permit back with FinishCall
//     (CallFinished), and a Cancel before any element with
//     ReleasePermission;
//   - panics: a panic in down.OnNext (or OnError/OnComplete) unwinds
//     through the Request that permit.Subscription made to the source or
//     through the operator's Granted, both of which cancel the subscription
//     and give the permit back before the panic goes on. So a fuseable
//     source must emit only inside its Subscription's Request or inside
//     subscribeFused, never on a goroutine of its own;
//   - serial signals (rule 1.3): the source signals down serially, and only
//     after the grant won the gate's CAS (subscribeFused runs from
//     Granted), so its signals never overlap the operator's Rejected.
//
// subscribeFused never calls parent's OnNext, OnError or OnComplete.
type fuseable[T any] interface {
	Publisher[T]
	subscribeFused(parent, down Subscriber[T], g *permit.Guard)
}

var _ fuseable[int] = pullPublisher[int]{}
