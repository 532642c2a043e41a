// Package single puts a bulkhead around an rxgo Single: every observation of
// the returned Single runs the source only while it holds a permit of the
// bulkhead.
//
// Building the pipeline takes no permit. Each Observe (and each Get or Run)
// asks for its own permit without blocking the caller. When the permit is
// granted the source is observed; when the call is rejected the channel
// receives one error item, a *bulkhead.FullError
// (errors.Is(err, bulkhead.ErrBulkheadFull)), and closes, and the source is
// never observed.
//
// The permit is given back with FinishCall as soon as the source produces
// its value or error (before the consumer receives it), or closes without
// one; with ReleasePermission if the consumer's context ends before that,
// the source's context being cancelled; and a request still waiting when the
// consumer's context ends is withdrawn without taking a permit.
//
// Permit rules shared by all operators: https://github.com/rxbulkhead/bulkhead/blob/main/docs/guide.md#the-same-permit-rules-in-each-types-words
//
// Unlike the Singles that rxgo's own operators build, the Single returned
// here (and the Singles and OptionalSingles its Map and Filter return) can
// be observed any number of times: each observation builds its own channel
// and acquires its own permit.
//
// With a permit, the source is observed as it would be without the
// bulkhead: with the options of the observation, and, when the consumer
// gives no context, with the source's own (see the observable package, "It
// behaves as its source"). After the value the observation stops reading:
// a source the consumer gave a context is cancelled then; one it gave none
// is left as rxgo leaves it (First or Find over a longer source stays
// blocked upstream, bulkhead or not: give Get a context).
//
// A consumer that neither reads the value nor cancels the context it passed
// with rxgo.WithContext leaves the observation blocked on its send; the
// permit is back already, but the goroutine stays (see the observable
// package for the rules a consumer must follow).
//
// An observation waiting for its permit (Observe, Get or Run of the
// returned Single, and of those its Map and Filter return) holds no
// goroutine of the bulkhead's, only the bulkhead's queue record and its own
// state; the grant starts the goroutine that observes src. Get blocks its
// caller until the value arrives or its context ends (Get on what Map
// returns learns its context on a goroutine rxgo.Defer starts for the call).
// rxgo's Map and Filter start a goroutine of their own, bulkhead or not.
package single
