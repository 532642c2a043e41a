package testkit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// A step verifier over a bulkheaded Flowable on a VirtualClock: the
// subscription waits for the permit, gets it when the call in flight
// finishes, and then receives its elements.
func ExampleVerify() {
	t := &printTB{} // in a real test: the test's t
	clock := testkit.NewVirtualClock(time.Time{})
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{
		MaxConcurrentCalls: 1,
		MaxWaitDuration:    50 * time.Millisecond,
		MaxQueuedCalls:     bulkhead.Unbounded,
	}, bulkhead.WithClock(clock))
	testkit.CheckPermits(t, walmart)
	walmart.TryAcquirePermission() // a call in flight

	ok := testkit.Verify(flowable.Bulkhead(walmart, flowable.Just("order-1", "order-2")), testkit.VerifierClock(clock)).
		ExpectSubscription().
		ExpectNoEvent(40*time.Millisecond). // waiting for the permit
		Then(walmart.FinishCall).           // the call in flight finishes
		ExpectNext("order-1", "order-2").
		ExpectComplete().
		Run(t)
	fmt.Println("passed:", ok)
	t.endTest()
	// Output:
	// passed: true
}

// The wait timeout of a bulkheaded Flowable, on a VirtualClock.
func ExampleVerifier_ThenAdvance() {
	t := &printTB{}
	clock := testkit.NewVirtualClock(time.Time{})
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{
		MaxConcurrentCalls: 1,
		MaxWaitDuration:    50 * time.Millisecond,
		MaxQueuedCalls:     bulkhead.Unbounded,
	}, bulkhead.WithClock(clock))
	walmart.TryAcquirePermission()

	ok := testkit.Verify(flowable.Bulkhead(walmart, flowable.Range(1, 3))).
		ExpectSubscription().
		ThenAdvance(clock, 50*time.Millisecond).
		ExpectErrorIs(bulkhead.ErrBulkheadFull).
		Run(t)
	fmt.Println("passed:", ok)
	walmart.FinishCall()
	// Output:
	// passed: true
}

// A TestSubscriber that requests two elements, then three more.
func ExampleNewTestSubscriber() {
	ts := testkit.NewTestSubscriber[int](testkit.InitialRequest(2))
	flowable.Range(1, 5).Subscribe(ts)
	fmt.Println(ts.Values(), ts.IsComplete())

	ts.Request(3)
	fmt.Println(ts.Values(), ts.IsComplete())
	// Output:
	// [1 2] false
	// [1 2 3 4 5] true
}

// What a failed assertion reports.
func ExampleTestSubscriber_AssertValues() {
	t := &printTB{}
	ts := testkit.NewTestSubscriber[int]()
	flowable.Just(1, 2).Subscribe(ts)
	ts.AssertValues(t, 1, 2, 3)
	// Output:
	// testkit: TestSubscriber: values = [1 2], want [1 2 3]
	//   received: OnSubscribe, OnNext(1), OnNext(2), OnComplete [2 value(s), completed]
}

// A TestObserver records an rxgo pipeline.
func ExampleObserve() {
	o := testkit.Observe(rxgo.Just(1, 2, 3)().Map(func(_ context.Context, v any) (any, error) {
		return v.(int) * 10, nil
	}))
	o.Await(time.Minute)
	fmt.Println(o.Values(), o.IsComplete())
	// Output:
	// [10 20 30] true
}

// Cancelling an rxgo observation mid-stream, as a consumer's context would.
func ExampleTestObserver_Cancel() {
	firstSent := make(chan struct{})
	src := rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
		rxgo.Of("first").SendContext(ctx, next)
		close(firstSent)
		<-ctx.Done() // would emit more, but the consumer cancels
	}})
	o := testkit.Observe(src)
	<-firstSent
	o.AwaitCount(1, time.Minute)
	o.Cancel()
	o.Await(time.Minute)
	fmt.Println(o.Values(), "complete:", o.IsComplete(), "cancelled:", o.IsCancelled())
	// Output:
	// [first] complete: false cancelled: true
}

// ObserveContext ends the observation when a parent context ends.
func ExampleObserveContext() {
	ctx, cancel := context.WithCancel(context.Background())
	o := testkit.ObserveContext(ctx, rxgo.Never())
	cancel()
	fmt.Println("ended:", o.Await(time.Minute), "cancelled:", o.IsCancelled())
	// Output:
	// ended: true cancelled: true
}
