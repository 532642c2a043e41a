// Package ro puts a bulkhead around an Observable of github.com/samber/ro:
// every subscription runs the source only while it holds a permit of the
// bulkhead. Import it under another name than samber's package, e.g.
//
//	import bro "github.com/rxbulkhead/bulkhead/contrib/ro"
//
//	orders := bro.Bulkhead(walmart, src)                  // ro.Observable[Order]
//	orders = ro.Pipe1(src, bro.Transformer[Order](walmart)) // the same, in ro.Pipe
//
// The contract is the one every operator of this library follows (see
// package operator):
//
//   - Building the pipeline takes no permit. Each Subscribe asks for its own
//     permit and never blocks: when the bulkhead is full, the subscription
//     waits as a queue record of the bulkhead, and no goroutine exists for
//     it until the permit is granted.
//   - A rejected subscription receives one Error, a *bulkhead.FullError
//     (errors.Is(err, bulkhead.ErrBulkheadFull)), and src is never
//     subscribed.
//   - Unsubscribe while the permit is pending withdraws the request: no
//     permit is consumed, src is never subscribed.
//   - The permit is given back exactly once: with FinishCall when src
//     completes or fails (before the subscriber receives the Complete or
//     the Error), and on Unsubscribe after the grant with FinishCall if a
//     value had been delivered, ReleasePermission if not (src is
//     unsubscribed). An observer built by ro (ro.NewObserver) whose Next
//     panics receives the panic as its Error, but ro leaves src subscribed:
//     the permit stays held until src ends or the subscription is
//     unsubscribed, as for any src still running.
//
// # Which goroutine subscribes the source
//
// A permit granted at once is granted on the subscriber's goroutine, inside
// Subscribe, and src is subscribed there. A permit granted later is
// granted on the goroutine that gave a permit back (inside its FinishCall
// or ReleasePermission: for another subscription of this operator, inside
// the Complete or Error of its source or inside its Unsubscribe; or inside
// ChangeConfig), and src is subscribed on that goroutine. A synchronous
// source (ro.Just, ro.Range) then emits all its values and completes there,
// before that FinishCall returns; its own FinishCall grants the next queued
// subscription (in the queue's order, FIFO unless configured LIFO), whose
// source is subscribed nested inside it, on the same goroutine, some stack
// frames deeper per grant. A Semaphore bounds that nesting: it runs at most
// 32 deliveries inline at once (counted over all goroutines, so fewer
// levels when other grants are being delivered elsewhere); past the bound
// each further grant runs on a fresh goroutine, and nesting resumes there
// once fewer deliveries are in progress. The call that gave the permit
// back returns once that goroutine has started (see
// bulkhead.Acquisition.OnDone). A chain of queued
// subscriptions thus nests at most about 32 grants deep on one goroutine,
// never without bound; another Bulkhead implementation delivers its grants
// where its own documentation says. To run the source elsewhere, put
// ro.SubscribeOn before the bulkhead:
//
//	ro.Pipe2(src, ro.SubscribeOn[Order](16), bro.Transformer[Order](walmart))
//
// A rejection that expires (MaxWaitDuration) is signalled on the
// bulkhead's timer goroutine.
//
// # Cost
//
// A pending subscription costs its queue record and the subscription
// objects, no goroutine: see docs/guide.md ("Which pipeline should I use")
// for the measured bytes.
package ro
