package bulkhead_test

import (
	"fmt"
	"log"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// A bulkhead on a virtual clock: its waits expire only when the clock is
// advanced.
func ExampleWithClock() {
	clock := testkit.NewVirtualClock(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
	bh, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
		bulkhead.WithClock(clock))
	bh.TryAcquirePermission()
	waiter := bh.AcquirePermissionAsync()
	clock.Advance(time.Second)
	fmt.Println(waiter.Err())
	bh.ReleasePermission()
	// Output: bulkhead "walmart": full, does not permit further calls (wait timeout)
}

// Every bulkhead of a registry gets the same options, here a shared clock.
func ExampleWithSemaphoreOptions() {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	if err != nil {
		log.Fatal(err)
	}
	walmart, _ := reg.Get("walmart")
	walmart.TryAcquirePermission()
	waiter := walmart.AcquirePermissionAsync()
	fmt.Println(clock.PendingTimers(), "timer armed")
	waiter.Cancel()
	walmart.ReleasePermission()
	// Output: 1 timer armed
}

// A named configuration for the partners that need more permits.
func ExampleWithConfig() {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20},
		bulkhead.WithConfig("big", bulkhead.Config{MaxConcurrentCalls: 60, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded}))
	if err != nil {
		log.Fatal(err)
	}
	walmart, _ := reg.GetWithConfig("walmart", "big")
	aldi, _ := reg.Get("aldi")
	fmt.Println(walmart.Config().MaxConcurrentCalls, aldi.Config().MaxConcurrentCalls)
	// Output: 60 20
}
