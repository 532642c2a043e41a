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
// A consumer that neither reads the value nor cancels the context it passed
// with rxgo.WithContext leaves the observation blocked on its send; the
// permit is back already, but the goroutine stays (see the observable
// package for the rules a consumer must follow).
//
// An observation waiting for its permit (Observe, Get or Run of the
// returned Single) holds no goroutine, only the bulkhead's queue record and
// its own state; the grant starts the goroutine that observes src. Get
// blocks its caller until the value arrives or its context ends. The
// Singles that Map and Filter return are rxgo's chains: a pending
// observation of them holds the operator's goroutine and one rxgo.Defer
// goroutine (see the observable package, "Cost").
package single
