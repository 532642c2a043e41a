// Package completable provides Completable, RxJava's fifth reactive type, a
// call that yields no value, only completion or an error ("send this EDI
// document", "ack this message"), which rxgo lacks, and the [Bulkhead]
// operator that runs such a call only while it holds a permit of a
// bulkhead.Bulkhead.
//
// An [Observer] receives OnSubscribe (with a [Disposable]) first, then at
// most one of OnComplete or OnError; signals are serial, and a Dispose that
// wins against the terminal signal suppresses it. Sources: [FromFunc] (the
// usual way in: a func run on its own goroutine, whose context ends on
// Dispose), [Complete], [Error] and [FromObservable]. Bridges: [Await]
// blocks until the call ends, [ToObservable] turns a Completable into an
// rxgo Observable that emits no item.
//
// [Bulkhead] never blocks the subscribing goroutine: while the permit is
// pending the observer holds a Disposable that withdraws the acquisition if
// it is disposed, and a rejection is signalled as OnError with a
// *bulkhead.FullError. The permit goes back with FinishCall when the call
// ends and with ReleasePermission when the observer disposes it first: at
// Dispose, even if the call has yet to see its context end and return.
//
// Permit rules shared by all operators: https://github.com/rxbulkhead/bulkhead/blob/main/docs/guide.md#the-same-permit-rules-in-each-types-words
package completable
