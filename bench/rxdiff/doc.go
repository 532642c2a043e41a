// Package rxdiff is the differential suite of the rxgo operators
// (observable, single, maybe): every rxgo v2.5.0 operator, factory,
// connectable, option, Single and OptionalSingle behaviour (rxgo's own
// test list is the checklist) is run on plain sources and on the same
// sources wrapped in a bulkhead of ample permits, for each kind of source,
// and the two runs are compared: the items, the errors, the end, the
// goroutines left, and the permits held.
//
// Each run is a testing/synctest bubble, so rxgo's timers run on the
// bubble's clock and "left blocked" is exact (synctest.Wait). A run is
// made twice, in the two ways rxgo code gives a context:
//
//   - "ctx on the consumer": the source is built with a context and the
//     consumer observes (Observe, Get, ToSlice, ...) with the same one, as
//     rxgo's own tests do; the run ends by cancelling it;
//   - "ctx on the source only": the consumer gives none; the run ends by
//     cancelling the source's context. A consumer that stops reading early
//     (Take, First, ...) is then given the idiom that releases the permit,
//     a context given to Bulkhead, which the run cancels last.
//
// The result is the table in docs/testing.md ("The differential suite of
// the rxgo operators"), which TestDifferentialTable generates and checks:
// run
//
//	cd bench/rxdiff && go test -run TestDifferentialTable -update
//
// to rewrite it after a change of behaviour. A case that behaves
// otherwise than the same, or than a documented class-5 difference (the
// permit held until a context ends, as the guide's "consumer's contract"
// says), fails the suite.
package rxdiff
