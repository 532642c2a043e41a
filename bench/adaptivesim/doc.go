// Package adaptivesim is the proof of package adaptive on a matrix of
// simulated partners: M/G/c partners (C servers behind a FIFO queue) with
// log-normal, heavy-tailed and bimodal service times, Poisson loads below,
// at and above C, a capacity that is steady, steps down and back or ramps,
// and limiters started below and above C (see Cells). Every limiter runs on
// the same arrivals in virtual time (testkit.VirtualClock, and a
// testing/synctest bubble for failsafe-go, which reads time.Now), so each
// run is deterministic per seed.
//
// TestDefaultHoldsOnHealthyPartners (in make test) checks the default
// algorithm on the healthy steady cells; TestMatrix -full runs the whole
// matrix with FullSeeds seeds and saves it, and TestMatrixDocs -update
// writes the "Adaptive limits" section of docs/benchmarks.md and its plots
// from it (make -f bench/adaptivesim/adaptivesim.mk adaptive-matrix).
// After a change that only some contenders see (the default algorithm),
// TestMatrixRerun -rerun REGEXP runs those again and merges them into the
// saved matrix (make ... adaptive-rerun).
package adaptivesim
