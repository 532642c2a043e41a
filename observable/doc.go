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
// # It behaves as its source
//
// With a permit, the returned Observable is observed as src would be, by
// Observe and by every rxgo operator chained after it:
//
//   - every item is forwarded, error items included: whether an error ends
//     the stream is the consumer's choice (rxgo's error strategies,
//     OnErrorReturn, OnErrorResumeNext, ...), as without the bulkhead;
//   - the options of the observation (those given to Bulkhead, then those
//     given to Observe or propagated by a chained operator: error strategy,
//     buffer, pool, publish strategy) are passed on to src;
//   - a consumer that gives no context leaves src its own: cancelling the
//     context src was built with (rxgo.Defer(..., rxgo.WithContext(ctx)))
//     ends src, and with it the observation and the permit. A consumer that
//     gives one replaces it, as a downstream context does in rxgo;
//   - granted at once, Observe returns a channel of the capacity src's
//     channel has (rxgo.WithBufferedChannel given to src);
//   - Connect connects src (a Connectable built with
//     rxgo.WithPublishStrategy), and so does Connect on an operator chained
//     after the Observable. Neither takes a permit: a Connect is no call,
//     each subscribed observation holds its own, and a full bulkhead does
//     not reject the Connect.
//
// The differential suite (bench/rxdiff) runs every rxgo operator and
// factory on plain and wrapped sources and lists what differs, and why, in
// docs/testing.md.
//
// # Walking away holds the permit
//
// rxgo gives an operator no signal when a consumer stops reading a channel.
// A consumer that walks away without draining the channel and without
// cancelling a context it gave (to Bulkhead, to Observe or to a chained
// operator) leaves the observation blocked on its next send, and that
// observation keeps its permit for ever. Operators that stop early (Take,
// First, Find, a StopOnError consumer at an error item the source follows
// with more items) do not cancel anything upstream: give them a context and
// cancel it once done. A context given only to the source does not help
// there: the wrapper is the stage left blocked. docs/guide.md ("The
// consumer's contract") lists each rxgo idiom and what it does to the
// permit. In tests, testkit.CheckPermits reports such a leak.
//
// # The permit is given back when
//
//   - the source closes its channel (FinishCall), including when its own
//     context ends;
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
// returns (when the permit is pending, before src is observed), and
// WithContext (given to Bulkhead, to Observe, or to a downstream operator,
// which propagates it upstream) is the consumer's context. Retry and
// BackOffRetry re-observe their source after an error item, so a pipeline
// such as
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
// An observation waiting for its permit holds no goroutine: Observe (and
// Run) requests the permit and returns; the bulkhead's queue record and
// the subscription's state (about 770 B in all, see docs/guide.md) are all
// it costs until the grant, which starts one goroutine that forwards src's
// items. Given rxgo options (WithContext, WithBufferedChannel), Observe
// first lets rxgo evaluate them: one short-lived goroutine of rxgo.Defer
// hands their context over and ends before Observe returns. A context's end
// is watched with context.AfterFunc, which starts no goroutine for the
// standard library's contexts.
//
// Chained operators are rxgo's, and they observe the same observation: the
// returned value is an rxgo.ObservableImpl whose Iterable is the bulkhead's
// (rxgo v2 has no exported constructor for that; the bulkhead sets the
// field once, when Bulkhead is called, and panics with a clear message on
// an rxgo whose ObservableImpl lacks it). A pending observation of
// observable.Bulkhead(b, src).Map(f) therefore holds only Map's own
// goroutine, which rxgo starts for every Map, bulkhead or not.
package observable
