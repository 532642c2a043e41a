// Package observable puts a bulkhead around an rxgo Observable: every
// observation of the returned Observable runs the source only while it holds
// a permit of the bulkhead.
//
// Building the pipeline takes no permit. Each Observe (each subscription)
// asks for its own permit without blocking the caller: Observe returns its
// channel at once, even when the bulkhead is full. When the permit is
// granted the source is observed and its items are forwarded; when the call
// is rejected the channel receives one error item, a *bulkhead.FullError
// (errors.Is(err, bulkhead.ErrBulkheadFull)), and closes, and the source is
// never observed.
//
// # Walking away holds the permit
//
// rxgo gives an operator no signal when a consumer stops reading a channel.
// A consumer that walks away without draining the channel and without
// cancelling the context it passed with rxgo.WithContext leaves the
// subscription blocked on its next send, and that subscription keeps its
// permit for ever. Every consumer must either drain the channel until it
// closes or cancel its context. Operators that stop early, such as Take or
// First, do not cancel anything upstream: give them a context and cancel it
// once done. In tests, testkit.CheckPermits reports such a leak.
//
// # The permit is given back when
//
//   - the source closes its channel or emits an error item (FinishCall; an
//     error item is the last item forwarded, as with rxgo's default
//     StopOnError strategy);
//   - the consumer's context ends while the source runs (FinishCall if the
//     source had emitted an item, ReleasePermission otherwise), and the
//     source's context is cancelled;
//   - the consumer's context ends while the acquisition waits: the
//     acquisition is withdrawn and no permit is taken.
//
// Cancellation in rxgo is a request: the permit comes back when the
// subscription cancels the source's context, and a source that does not
// watch its context may run a little longer on its own goroutine.
//
// Permit rules shared by all operators: https://github.com/rxbulkhead/bulkhead/blob/main/docs/guide.md#the-same-permit-rules-in-each-types-words
//
// # Options, Retry and BackOffRetry
//
// rxgo options pass through: WithBufferedChannel sizes the channel Observe
// returns, and WithContext (given to Bulkhead, to Observe, or to a
// downstream operator, which propagates it upstream) is the consumer's
// context. Retry and BackOffRetry re-observe their source after an error
// item, so a pipeline such as
//
//	observable.Bulkhead(b, src).Retry(3, func(err error) bool {
//		return errors.Is(err, bulkhead.ErrBulkheadFull)
//	})
//
// asks for a new permit on each attempt. Note that rxgo's Retry and
// BackOffRetry observe their source as soon as they are called, not when
// their result is observed: with them, the permit is requested when the
// pipeline is built.
//
// # Cost
//
// A subscription waiting for its permit holds no goroutine: Observe (and
// Run) requests the permit and returns; the bulkhead's queue record and
// the subscription's state (about 650 B in all, see docs/guide.md) are all
// it costs until the grant, which starts one goroutine that observes src
// and forwards its items. Given rxgo options (WithContext,
// WithBufferedChannel), Observe lets rxgo evaluate them, which runs one
// short-lived goroutine of rxgo.Defer that asks for the permit, pumps src
// itself when the permit is free, and ends at once when it is not; a
// context's end is then watched with context.AfterFunc, which starts no
// goroutine for the standard library's contexts.
//
// Chained operators are rxgo's: they observe the rxgo Observable they were
// called on, which is an rxgo.Defer inside the returned value, not its
// Observe. A pending observation of observable.Bulkhead(b, src).Map(f)
// therefore holds two goroutines: Map's own (rxgo starts one for every
// Map, bulkhead or not) and the Defer goroutine, which waits there for the
// permit. The permit rules are the same on both paths.
package observable
