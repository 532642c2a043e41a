// Package flowable provides Reactive Streams for Go (Publisher, Subscriber,
// Subscription with demand) and the Bulkhead operator that subscribes a
// source only while it holds a permit of a bulkhead.Bulkhead.
//
// [Bulkhead] never blocks the subscribing goroutine: while the permit is
// pending, the subscriber holds a subscription that buffers its demand and
// withdraws the acquisition if it cancels (see [Bulkhead] for the full
// contract). The sources ([Just], [FromSlice], [Range], [Empty], [Error],
// [Never], [Defer], [Create]), the [Funcs] subscriber and the rxgo bridges
// ([FromObservable], [ToObservable]) follow the Reactive Streams rules:
// signals are serial (rule 1.3), nothing is emitted that was not requested,
// demand saturates at math.MaxInt64 (rule 3.17) and Request(n <= 0) ends the
// subscription with an OnError matching [ErrNonPositiveRequest] (rule 3.9).
package flowable
