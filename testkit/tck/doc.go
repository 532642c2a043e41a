// Package tck is a Reactive Streams rule suite for Go: [VerifyPublisher]
// runs one subtest per rule against any flowable.Publisher that a factory
// makes, the way the Java Reactive Streams TCK checks a Java Publisher.
//
// Each subtest is named after the rule it checks ("rule_1.1", "rule_3.13",
// ...) and its failure messages quote the rule. Every check runs in a fresh
// testing/synctest bubble, with a publisher the factory makes inside that
// bubble, so the suite can tell "nothing more will arrive" from "nothing
// arrived yet" (synctest.Wait) without sleeping, and time-dependent
// publishers (a bulkhead with a wait timeout) run on the bubble's fake
// clock. The recording subscriber of the suite checks, on every signal,
// the rules a subscriber can see: no OnNext beyond demand (1.1), no
// overlapping signals (1.3), nothing after a terminal signal (1.7),
// OnSubscribe first and once (1.9, 2.12), no nil argument (2.13), bounded
// recursion between Request and OnNext (3.3).
//
// A check that does not apply to a publisher (rule 3.9 for a publisher
// that terminates before it can be asked anything, say) is skipped with
// the reason; [Options] describes the publisher so the suite knows what to
// expect.
package tck
