// Package rodiff is the differential suite of contrib/ro, the bulkhead
// around a samber/ro v0.3.0 Observable: each samber/ro operator in the
// table runs on plain sources and on the same sources wrapped in
// bro.Bulkhead with ample permits, for each kind of source (synchronous,
// asynchronous, timed), in a testing/synctest bubble, and the two runs are
// compared: the values, the error, the completion, the goroutines left and
// the permits held. samber/ro unsubscribes upstream when an operator stops
// early (Take, First, ...), so every case must behave the same: there is no
// class-5 exception here. The table is in docs/testing.md, generated and
// checked by TestDifferentialTable (-update rewrites it).
package rodiff
