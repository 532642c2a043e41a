// Package linearizability checks that concurrent use of a bulkhead.Semaphore
// is linearizable: every history of TryAcquirePermission,
// AcquirePermissionAsync, Cancel, FinishCall, ChangeConfig, Metrics and
// reads of an acquisition's outcome, recorded from several goroutines at
// once, can be explained by running the same operations one at a time, in
// an order that respects real time, against [Model], a sequential model of
// the bulkhead. The checker is github.com/anishathalye/porcupine; this is a
// nested module so that the core module does not depend on it.
//
// The model allows one relaxation that the Semaphore documents: the outcome
// of a queued acquisition is decided (under the bulkhead's lock) before it
// is delivered (Done closed, Err no longer ErrPending), possibly by another
// goroutine that is already delivering; so a read may still see the
// outcome pending after the decision, but never after it has seen it
// decided.
package linearizability
