// Package testkit tests code that uses bulkheads and reactive pipelines
// without sleeping and without flakes.
//
// Time, two ways:
//
//   - [VirtualClock] is a [bulkhead.Clock] whose time moves only when the
//     test calls Advance. Give it to a bulkhead with [bulkhead.WithClock]:
//     a wait timeout of any length is then tested in microseconds of real
//     time, and timers fire on the test goroutine, so what they cause has
//     happened when Advance returns.
//   - Inside a testing/synctest bubble, the real clock is virtual: no clock
//     needs injecting, and time jumps ahead whenever every goroutine of the
//     bubble is blocked. Everything in this package works inside a bubble;
//     the waits of Await and of the step verifier then cost no real time.
//
// Recording and scripting:
//
//   - [TestSubscriber] is a recording flowable.Subscriber with assertions
//     (AssertValues, AssertComplete, AssertError, ...) whose failure
//     messages show every signal received; it also reports Reactive
//     Streams rule violations of the publisher.
//   - [Verify] builds a step verifier: a script of what a Publisher must
//     signal (ExpectNext, ExpectErrorIs, ...) interleaved with actions
//     (ThenRequest, ThenAdvance, ThenCancel, Then), played by Run.
//   - [Observe] returns a [TestObserver] that records an rxgo Observable,
//     Single or OptionalSingle and can cancel it mid-stream.
//
// Waiting for the code under test: [AwaitQueued] waits until a bulkhead
// has n calls queued, for instance by the goroutines of an rxgo pipeline,
// before the test moves a VirtualClock or gives a permit back (inside a
// bubble it is one synctest.Wait). [VerifierClock] makes a step verifier's
// ExpectNoEvent advance a VirtualClock.
//
// The permit-leak check: [CheckPermits] (or [CheckRegistry] for a whole
// Registry) fails the test if a bulkhead still holds a permit or a queued
// call when the test ends. Every test that involves a bulkhead should call
// it right after creating the bulkhead. Inside a testing/synctest bubble a
// check that fails is read again once every other goroutine of the bubble
// is durably blocked, so a goroutine still on its way to giving a permit
// back when the test function returned is not reported.
//
// A synctest-based test of an rxgo pipeline (sendOrder acquires a permit of
// walmart, answers after 100 ms and gives the permit back):
//
//	func TestSecondOrderTimesOut(t *testing.T) {
//		synctest.Test(t, func(t *testing.T) {
//			walmart, _ := bulkhead.New("walmart", bulkhead.Config{
//				MaxConcurrentCalls: 1,
//				MaxWaitDuration:    50 * time.Millisecond,
//				MaxQueuedCalls:     bulkhead.Unbounded,
//			})
//			testkit.CheckPermits(t, walmart)
//			first := testkit.Observe(sendOrder(walmart, "order-1"))
//			synctest.Wait() // order-1 holds the permit
//			second := testkit.Observe(sendOrder(walmart, "order-2"))
//
//			second.Await(time.Minute) // 50 ms of bubble time, no real time
//			second.AssertError(t, bulkhead.ErrBulkheadFull)
//			first.Await(time.Minute)
//			first.AssertResult(t, "order-1 sent")
//		})
//	}
//
// docs/testing.md compares the two styles and says when to use which.
package testkit
