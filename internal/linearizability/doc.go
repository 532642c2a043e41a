// Package linearizability checks that concurrent use of a bulkhead.Semaphore
// is linearizable: every history of TryAcquirePermission,
// AcquirePermissionAsync and FinishCall (also of weighted calls), Cancel,
// ChangeConfig (of MaxConcurrentCalls and MaxWaitDuration), Metrics, reads
// of an acquisition's outcome, and expiry, recorded from several
// goroutines at once, can be explained by running the same operations one at a time, in
// an order that respects real time, against [Model], a sequential model of
// the bulkhead. The checker is github.com/anishathalye/porcupine; this is a
// nested module so that the core module does not depend on it.
//
// The model has no relaxation for delivery: a decision is visible at once
// (Err and Done reflect it before the operation that decided it returns,
// and before any callback runs), so a read that returns ErrPending is right
// only while the acquisition is undecided. Histories may include OnDone
// callbacks that re-enter the bulkhead (release, cancel, try, ChangeConfig,
// read), block and panic; what a callback does is recorded as operations
// of its own, inside the interval of the operation that ran it, or on
// their own when the Semaphore hands them to another goroutine.
//
// Time is a [Clock] that clients advance. Its steps are operations (Tick),
// and so is each batch of the Semaphore's expiry sweep (Expire, recorded
// through internal/semhook, which also shrinks the batches so that a
// sweep of a few waiters takes several): a queued call's deadline is the
// clock at its enqueue plus the MaxWaitDuration then in force; a batch
// rejects expired waiters in queue order, the sweep's last leaves none
// behind, and until a batch reaches it an expired waiter may still be
// granted or withdrawn. The sweep's callbacks run through the relay of
// delivery.go, so a callback that blocks has the ones after it run on
// another goroutine while it blocks.
//
// Weighted calls (Semaphore.Call(k), issue 27) are in the model too: a
// Try, Acquire or Release carries its weight, 1 to 3 in the histories
// (Recorder.Weights). The model states the bounded bypass of
// docs/design.md, "Weighted calls on a Semaphore", as plainly as it can: a
// pass (at the end of a release, a ChangeConfig, an enqueue, a winning
// Cancel and a sweep, when a permit is free and a call waits) grants in
// grant order every waiter that fits; one that does not fit is marked, and
// the waiters behind it may go only while the permits granted past a
// marked waiter (bypassed) stay within MaxConcurrentCalls; bypassed goes
// back to 0 when no marked waiter is queued. The grants of a pass are owed
// until their Grant operations (recorded through internal/semhook, like
// every decision of a critical section), and no operation that takes the
// lock may come first, which is the no-stall half of the claim. A call
// heavier than MaxConcurrentCalls is rejected at once (TooHeavy), and a
// ChangeConfig that lowers the limit below a queued waiter's weight
// rejects it before its pass, from the head (Reject, recorded through
// internal/semhook too). Replay runs the linearization porcupine found
// through the model again and counts what the passes did, so the tests
// can show the histories reach the bound.
package linearizability
