// Package flowable provides Reactive Streams for Go (Publisher, Subscriber,
// Subscription with demand) and the Bulkhead operator that subscribes a
// source only while it holds a permit of a bulkhead.Bulkhead.
//
// [Bulkhead] never blocks the subscribing goroutine: while the permit is
// pending, the subscriber holds a subscription that buffers its demand and
// withdraws the acquisition if it cancels (see [Bulkhead] for the full
// contract). Elements never touch the bulkhead; the synchronous sources
// [Range], [FromSlice] and [Just] are fused with the operator, so through
// [Bulkhead] they deliver each element straight to the subscriber, at the
// cost of the bare source.
//
// The sources ([Just], [FromSlice], [Range], [Empty], [Error], [Never],
// [Defer], [Create]), the [Funcs] subscriber and the rxgo bridges
// ([FromObservable], [ToObservable]) follow the Reactive Streams rules:
// signals are serial (rule 1.3), nothing is emitted that was not requested,
// demand saturates at math.MaxInt64 (rule 3.17) and Request(n <= 0) ends the
// subscription with an OnError matching [ErrNonPositiveRequest] (rule 3.9).
//
// Permit rules shared by all operators: https://github.com/rxbulkhead/bulkhead/blob/main/docs/guide.md#the-same-permit-rules-in-each-types-words
package flowable
