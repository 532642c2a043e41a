package testkit_test

import (
	"errors"
	"fmt"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// A wait timeout of 50 ms, tested without waiting: the clock moves only when
// the test advances it.
func ExampleVirtualClock() {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{
		MaxConcurrentCalls: 1,
		MaxWaitDuration:    50 * time.Millisecond,
		MaxQueuedCalls:     bulkhead.Unbounded,
	}, bulkhead.WithClock(clock))

	walmart.TryAcquirePermission() // the only permit is taken
	third := walmart.AcquirePermissionAsync()

	clock.Advance(49 * time.Millisecond)
	fmt.Println("after 49ms:", third.Err())
	clock.Advance(time.Millisecond)
	fmt.Println("after 50ms:", third.Err())
	fmt.Println("is ErrBulkheadFull:", errors.Is(third.Err(), bulkhead.ErrBulkheadFull))

	walmart.FinishCall()
	// Output:
	// after 49ms: bulkhead: permit acquisition pending
	// after 50ms: bulkhead "walmart": full, does not permit further calls (wait timeout)
	// is ErrBulkheadFull: true
}

// Queued calls are granted in FIFO order as permits come back.
func ExampleVirtualClock_fifoGrantOrder() {
	clock := testkit.NewVirtualClock(time.Time{})
	target, _ := bulkhead.New("target", bulkhead.Config{
		MaxConcurrentCalls: 1,
		MaxWaitDuration:    time.Second,
		MaxQueuedCalls:     bulkhead.Unbounded,
	}, bulkhead.WithClock(clock))

	target.TryAcquirePermission()
	for _, name := range []string{"first", "second", "third"} {
		target.AcquirePermissionAsync().OnDone(func(err error) {
			fmt.Printf("%s granted at %v (err=%v)\n", name, clock.Since(time.Time{}), err)
		})
	}
	for range 3 { // every 10ms the call in flight finishes
		clock.Advance(10 * time.Millisecond)
		target.FinishCall()
	}
	target.FinishCall()
	fmt.Println("in flight:", target.Metrics().InFlightCalls, "queued:", target.Metrics().QueuedCalls)
	// Output:
	// first granted at 10ms (err=<nil>)
	// second granted at 20ms (err=<nil>)
	// third granted at 30ms (err=<nil>)
	// in flight: 0 queued: 0
}
