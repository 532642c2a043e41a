// Package rxpermit runs rxgo sources under bulkhead permits. It builds the
// Observable, Single and OptionalSingle that the observable, single and
// maybe operators return, so that the three share one subscription loop.
//
// Every observation of what it builds is a subscription of its own: it
// requests a permit through a permit.Disposable (never blocking the
// observer), observes the source only once the permit is granted, with a
// context that ends with the observation, and gives the permit back exactly
// once through the permit.Guard:
//
//   - [Observable] forwards every item; the permit goes back with
//     FinishCall when the source closes or emits an error item (before the
//     consumer receives the error), and when the consumer goes away after
//     an item was forwarded; with ReleasePermission when it goes away before.
//   - [Single] and [OptionalSingle] forward the source's first item only;
//     the permit goes back with FinishCall when that item (a value or an
//     error) or the empty closing arrives, before the consumer receives it,
//     and with ReleasePermission when the consumer goes away first.
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
// rxgo starts one goroutine per observation; this package starts none of
// its own, except that Get runs one for the duration of the call.
package rxpermit
