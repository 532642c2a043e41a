// Package iterate runs Go iterators (range-over-func, iter.Seq) under a
// bulkhead permit, for code that is not reactive: one permit per loop.
//
//	for line, err := range iterate.Seq(ctx, partner, lines) {
//		if err != nil {
//			return err // bulkhead full, or ctx ended while waiting
//		}
//		send(line)
//	}
//
// # The permit
//
// Ranging over the returned iterator takes a permit first, blocking the
// ranging goroutine until the bulkhead grants it, rejects the call, or ctx
// ends (then the request is withdrawn). Building the iterator takes
// nothing, and each range takes its own permit, so an iterator can be
// ranged over many times, from many goroutines.
//
// A call that gets no permit yields one pair, the zero value and the error
// (a *bulkhead.FullError matching bulkhead.ErrBulkheadFull for a Semaphore,
// or ctx.Err()), and the source is not ranged over. Otherwise the source's
// values are yielded with a nil error, and the permit is given back exactly
// once, before the loop statement completes:
//
//   - with FinishCall when the source ends (exhausted, or it returned after
//     the loop body broke out), including a source that yields nothing;
//   - when a panic or runtime.Goexit (t.FailNow inside the loop) unwinds
//     through the iterator (from the loop body or from the source, also a
//     source that swallows the body's panic, which Go turns into a panic of
//     its own), with FinishCall if the loop body had received a value (the
//     call ran) and ReleasePermission if not; the panic goes on.
//
// ctx bounds the wait only: once the permit is held, the loop runs to its
// end whatever ctx does (give ctx to the source too if it should stop).
//
// With a bulkhead that can time calls (a bulkhead.CallTimer: a Semaphore,
// an adaptive bulkhead), the loop's CallFinished carries its duration
// (Event.CallDuration), from the grant to the end of the loop, for the
// call-duration histogram of the metrics exporters. A Semaphore's permit
// is waited for with its AcquirePermission, which publishes the grant
// before it returns; any other bulkhead's (an adaptive bulkhead's) through
// a callback of its Acquisition, which runs once the grant was published,
// so the loop's CallPermitted precedes its CallFinished.
//
// # Cost
//
// A call waiting for its permit is the ranging goroutine itself, blocked,
// plus the bulkhead's queue record: iterators block by design. For many
// waiting calls without a goroutine each, use a reactive pipeline
// (flowable, observable, contrib/ro): see docs/guide.md, "Which pipeline
// should I use".
//
// A channel form (a func returning <-chan T) is deliberately not offered:
// it would need a goroutine per call to feed the channel and a rule for a
// reader that stops reading, both of which the iterator avoids.
package iterate
