// Package adaptivesim is the proof of package adaptive on a simulated
// partner: a partner that serves C calls at once at its base latency and
// queues the rest, driven by an open-loop (Poisson) load above and below C,
// whose C drops ten-fold and recovers. Each limiter runs on the same
// arrivals in virtual time (testkit.VirtualClock, and a testing/synctest
// bubble for failsafe-go, which reads time.Now), so runs are deterministic.
//
// TestSimulation runs every contender, checks the goals and prints the
// table; with -update it rewrites the "Adaptive limits" section of
// docs/benchmarks.md and its plots.
package adaptivesim
