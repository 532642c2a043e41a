// Package linearizability checks that concurrent use of a bulkhead.Semaphore
// is linearizable: every history of TryAcquirePermission,
// AcquirePermissionAsync, Cancel, FinishCall, ChangeConfig, Metrics and
// reads of an acquisition's outcome, recorded from several goroutines at
// once, can be explained by running the same operations one at a time, in
// an order that respects real time, against [Model], a sequential model of
// the bulkhead. The checker is github.com/anishathalye/porcupine; this is a
// nested module so that the core module does not depend on it.
//
// The model has no relaxation for delivery: a decision is visible at once
// (Err and Done reflect it before the operation that decided it returns,
// and before any callback runs), so a read that returns ErrPending is right
// only while the acquisition is undecided. Histories may include OnDone
// callbacks that re-enter the bulkhead (release, cancel, ChangeConfig,
// read) and panic; what a callback does is recorded as operations of its
// own, inside the interval of the operation that ran it.
package linearizability
