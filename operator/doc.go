// Package operator is one entry point that applies a bulkhead to a source
// of any of the five reactive types, like resilience4j's
// BulkheadOperator.of(bulkhead):
//
//	op := operator.Of(walmart)
//	orders := op.Observable(orders)          // rxgo.Observable
//	invoice := op.Single(invoice)            // rxgo.Single
//	ack := op.Maybe(ack)                     // rxgo.OptionalSingle
//	send := op.Completable(send)             // completable.Completable
//	lines := operator.Flowable(op, lines)    // flowable.Publisher[T]
//	wrapped, err := op.Apply(src)            // any of them, chosen at run time
//
// The package adds no behaviour of its own: each method delegates to the
// Bulkhead function of the package for that type (observable, single,
// maybe, completable, flowable), whose documentation states the contract.
// All five follow the same permit rules: the permit is requested when the
// source is subscribed (observed), never when the pipeline is built;
// subscribing never blocks; a rejection is signalled as an error matching
// bulkhead.ErrBulkheadFull and the source is never subscribed; cancelling
// while the permit is pending withdraws the request; the permit goes back
// exactly once, with FinishCall when the call ran and ReleasePermission
// when it was cancelled before delivering anything.
//
// [Op.Apply] dispatches on the dynamic type of its argument and returns an
// error matching [ErrUnsupportedSource] for a type it cannot wrap. Because
// Go cannot instantiate generic code at run time, Apply wraps a
// flowable.Publisher only if its element type is any; use [Flowable] for
// the others.
//
// Permit rules shared by all operators: https://github.com/rxbulkhead/bulkhead/blob/main/docs/guide.md#the-same-permit-rules-in-each-types-words
package operator
