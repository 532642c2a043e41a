// Package rxpermit runs rxgo sources under bulkhead permits. It builds the
// Observable, Single and OptionalSingle that the observable, single and
// maybe operators return, so that the three share one subscription loop.
//
// Every observation of what it builds is a subscription of its own: it
// requests a permit through a permit.Disposable (never blocking the
// observer), observes the source only once the permit is granted, and
// gives the permit back exactly once through the permit.Guard:
//
//   - [Observable] forwards every item, error items included (the consumer
//     decides whether an error ends the stream); the permit goes back with
//     FinishCall when the source closes, and when the consumer's context
//     ends after an item was forwarded; with ReleasePermission when it ends
//     before.
//   - [Single] and [OptionalSingle] forward the source's first item only;
//     the permit goes back with FinishCall when that item (a value or an
//     error) or the empty closing arrives, before the consumer receives it,
//     and with ReleasePermission when the consumer's context ends first.
//
// The source is observed as an rxgo operator observes its own: with the
// options of the observation (the operator's, then the Observe's or those
// a chained operator propagates), and with a child of the consumer's
// context when that context can end (so that ending the observation ends
// the source); when it cannot, the source keeps the context it was built
// with. Granted at once, the source is observed on the caller's goroutine,
// so that Observe returns a channel of the source's capacity and a
// Connectable source has its subscriber before Observe returns.
//
// A rejected observation receives one error item holding the acquisition's
// error (a *bulkhead.FullError for a Semaphore) and the source is never
// observed. A consumer whose context ends while the permit is pending
// withdraws the request; no permit is consumed.
//
// The Single and OptionalSingle returned, and those their Map and Filter
// return, observe afresh on every Observe, Get and Run, unlike the Singles
// rxgo's own operators build, which share one channel.
//
// # Goroutines
//
// What it builds are types of this package that satisfy rxgo's
// interfaces; every other method of the Observable (Map, Retry, Take,
// Connect, ...) is rxgo's, on an rxgo.ObservableImpl whose Iterable is the
// observation itself (see chainable), so chained operators observe it with
// the options they propagate. Observe, Get and Run request the permit first
// and start a goroutine only once it is granted, so a pending observation
// parks nothing (see subscription for who delivers the outcome). rxgo's
// options are opaque (their struct is unexported): an observation given
// options has a connectable rxgo.FromChannel built with them evaluate them
// (the context, the channel's capacity, and whether they ask to connect, as
// a Connect on a chained operator does: that request takes no permit).
package rxpermit
