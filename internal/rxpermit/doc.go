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
// # Goroutines
//
// What it builds are types of this package that satisfy rxgo's
// interfaces. Their Observe, Get and Run request the permit first and start
// a goroutine only once it is granted, so a pending observation parks
// nothing (see subscription for who delivers the outcome). rxgo's options
// are opaque (their struct is unexported), so an observation given options
// lets rxgo.Defer evaluate them: the goroutine Defer starts learns the
// context, requests the permit and either pumps the source (granted at
// once) or ends (pending; context.AfterFunc watches the context).
//
// Every other method of the Observable (Map, Retry, Take, ...) is rxgo's,
// on an embedded rxgo.Defer Observable whose producer runs the same
// subscription but waits for the outcome on Defer's goroutine: rxgo's
// operators observe the ObservableImpl they are called on and cannot reach
// our Observe. A pending chained observation therefore holds that
// goroutine, plus whatever the operator starts itself.
package rxpermit
