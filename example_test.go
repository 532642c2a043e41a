package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// A partner bulkhead: two calls at once, others wait up to 50 ms in a queue
// of at most 100.
func Example() {
	bh, err := bulkhead.New("walmart", bulkhead.Config{
		MaxConcurrentCalls: 2,
		MaxWaitDuration:    50 * time.Millisecond,
		MaxQueuedCalls:     100,
	})
	if err != nil {
		panic(err)
	}
	a := bh.AcquirePermissionAsync()
	a.OnDone(func(err error) {
		if err != nil {
			fmt.Println("rejected:", err)
			return
		}
		defer bh.FinishCall() // the call ran: give the permit back
		fmt.Println("calling walmart")
	})
	// Output: calling walmart
}

func ExampleNew() {
	_, err := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 0})
	fmt.Println(err)
	// Output: bulkhead "walmart": invalid config: MaxConcurrentCalls must be >= 1, got 0
}

func ExampleSemaphore_AcquirePermissionAsync() {
	bh, _ := bulkhead.New("carrefour", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded})
	first := bh.AcquirePermissionAsync() // granted at once
	second := bh.AcquirePermissionAsync()
	fmt.Println(first.Err(), second.Err())

	second.OnDone(func(err error) { fmt.Println("second:", err) })
	bh.FinishCall() // the first call finished: the permit goes to the second
	bh.FinishCall()
	// Output:
	// <nil> bulkhead: permit acquisition pending
	// second: <nil>
}

func ExampleSemaphore_AcquirePermission() {
	bh, _ := bulkhead.New("tesco", bulkhead.Config{MaxConcurrentCalls: 1})
	ctx := context.Background()
	if err := bh.AcquirePermission(ctx); err == nil {
		defer bh.FinishCall()
	}
	err := bh.AcquirePermission(ctx) // full, and MaxWaitDuration is 0
	fmt.Println(errors.Is(err, bulkhead.ErrBulkheadFull))
	// Output: true
}

func ExampleSemaphore_TryAcquirePermission() {
	bh, _ := bulkhead.New("aldi", bulkhead.Config{MaxConcurrentCalls: 1})
	fmt.Println(bh.TryAcquirePermission(), bh.TryAcquirePermission())
	bh.ReleasePermission()
	// Output: true false
}

func ExampleSemaphore_ChangeConfig() {
	bh, _ := bulkhead.New("lidl", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded})
	bh.TryAcquirePermission()
	waiter := bh.AcquirePermissionAsync()
	_ = bh.ChangeConfig(bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded})
	fmt.Println(waiter.Err(), bh.Metrics().InFlightCalls)
	bh.FinishCall()
	bh.FinishCall()
	// Output: <nil> 2
}

func ExampleSemaphore_OnEvent() {
	bh, _ := bulkhead.New("metro", bulkhead.Config{MaxConcurrentCalls: 1})
	remove := bh.OnEvent(func(e bulkhead.Event) { fmt.Println(e.Name, e.Type, e.Reason) })
	defer remove()
	bh.TryAcquirePermission()
	bh.TryAcquirePermission()
	bh.FinishCall()
	// Output:
	// metro permitted none
	// metro rejected no wait
	// metro finished none
}

func ExampleAcquisition_Cancel() {
	bh, _ := bulkhead.New("ikea", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded})
	bh.TryAcquirePermission()
	waiter := bh.AcquirePermissionAsync()
	if !waiter.Cancel() {
		// Lost the race to a grant: this code owns the permit.
		bh.ReleasePermission()
	}
	fmt.Println(waiter.Err(), bh.Metrics().QueuedCalls)
	bh.ReleasePermission()
	// Output: bulkhead: cancelled while waiting 0
}

func ExampleNewRegistry() {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20},
		bulkhead.WithConfig("big", bulkhead.Config{MaxConcurrentCalls: 60}))
	if err != nil {
		log.Fatal(err)
	}
	walmart, _ := reg.GetWithConfig("walmart", "big")
	carrefour, _ := reg.Get("carrefour")
	for _, bh := range reg.All() {
		fmt.Println(bh.Name(), bh.Metrics().MaxAllowedConcurrentCalls)
	}
	_, _ = walmart, carrefour
	// Output:
	// carrefour 20
	// walmart 60
}

func ExampleFromBlocking() {
	sem, _ := bulkhead.New("legacy", bulkhead.Config{MaxConcurrentCalls: 1})
	var bh bulkhead.Bulkhead = bulkhead.FromBlocking(sem) // any BlockingBulkhead
	a := bh.AcquirePermissionAsync()
	<-a.Done()
	fmt.Println(a.Err())
	bh.FinishCall()
	// Output: <nil>
}

func ExampleGrantedAcquisition() {
	// A custom Bulkhead that never limits anything.
	a := bulkhead.GrantedAcquisition()
	fmt.Println(a.Err(), a.Granted())
	// Output: <nil> true
}

func ExampleRejectedAcquisition() {
	a := bulkhead.RejectedAcquisition(&bulkhead.FullError{Name: "custom", Reason: bulkhead.QueueFull})
	fmt.Println(errors.Is(a.Err(), bulkhead.ErrBulkheadFull))
	// Output: true
}

// A custom Bulkhead that really waits keeps the Resolver in its own queue
// and decides the outcome when its permit arrives.
func ExamplePendingAcquisition() {
	a, r := bulkhead.PendingAcquisition(func() { fmt.Println("withdrawn from the queue") })
	a.OnDone(func(err error) { fmt.Println("outcome:", err) })
	fmt.Println("pending:", a.Err())
	r.Grant() // the permit arrived
	// Output:
	// pending: bulkhead: permit acquisition pending
	// outcome: <nil>
}

// In shadow mode a bulkhead lets every call through and says, in a
// CallShadowed event, what it would have done: here the second call would
// have been rejected.
func ExampleConfig_shadowMode() {
	bh, _ := bulkhead.New("trial", bulkhead.Config{MaxConcurrentCalls: 1, ShadowMode: true})
	bh.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallShadowed {
			fmt.Println("would have been rejected:", e.Reason)
		}
	})
	first, second := bh.TryAcquirePermission(), bh.TryAcquirePermission()
	fmt.Println(first, second, bh.Metrics().InFlightCalls)
	bh.FinishCall()
	bh.FinishCall()
	// Output:
	// would have been rejected: no wait
	// true true 2
}
