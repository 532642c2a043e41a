// Package hubsim is the proof of the hub budget (bulkhead.Budget) on a
// simulated EDI hub, on virtual time: 500 partners, each behind its own
// Semaphore, share a hub whose capacity is 1,000 permits. 450 partners send
// interactive calls all along (Poisson arrivals, log-normal service
// times); at BurstAt the other 50 re-send a batch of weighted documents
// (a document costs 1, 2, 4 or 8 permits). The same arrivals run in four
// modes:
//
//   - NoBurst: interactive traffic only, through the budget: the baseline
//     whose interactive p99 the burst must not raise by more than 1.2×;
//   - Budget: the burst through the budget, interactive calls in a higher
//     class with headroom, batch documents in a lower one;
//   - OneClass: the burst through a budget with a single class (max-min
//     fairness without priorities), to show what the classes add;
//   - NoBudget: what users get without a budget: the partners' bulkheads
//     only, in front of the hub's capacity as a FIFO pool of 1,000 units
//     (a connection pool, the hub's CPU), which calls wait for in arrival
//     order until their deadline.
//
// A call of weight k takes k permits of its partner's bulkhead as of the
// hub (as BudgetPartner.Call does with a *Semaphore partner).
//
// MixedScenario runs the same hub with the batch partners also sending
// interactive calls, their documents sent through a few senders each:
// their documents then fill their bulkheads, and their interactive calls
// wait behind them in those bulkheads' FIFO queues, before the budget.
// MixedSized sizes the batch partners' bulkheads for their documents'
// weights: a partner's interactive calls then meet its documents in the
// budget, where, with one class, they wait behind them in the same lane,
// which the classes prevent.
//
// Each run is deterministic per seed (testkit.VirtualClock, inside a
// testing/synctest bubble so that callbacks handed to fresh goroutines
// have run before time moves on). The sim takes a call's partner permits
// and its budget permits itself, and hands the outcomes delivered to
// callbacks on to the next level in call order on its main loop (sim.settle
// says why: a weighted release at a partner delivers several grants on
// several goroutines, whose order of arrival in the budget would depend on
// scheduling). TestQuick, in make test, runs
// a short version and checks the goals; TestSweep -full runs the full
// scenario over Seeds seeds and, with -update, writes the "The hub budget"
// section of docs/benchmarks.md (make hub-sim).
package hubsim
