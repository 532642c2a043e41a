package bulkhead_test

import (
	"fmt"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// A call that takes its start right after its grant, and gives its permit
// back with FinishCallStarted, reports how long it ran in its CallFinished
// (Event.CallDuration); a bare FinishCall does not say which call finished.
func ExampleSemaphore_StartCall() {
	clock := testkit.NewVirtualClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	bh, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 2}, bulkhead.WithClock(clock))
	bh.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallFinished {
			fmt.Println("finished, ran", e.CallDuration)
		}
	})

	if bh.TryAcquirePermission() {
		start := bh.StartCall()
		clock.Advance(120 * time.Millisecond) // the call to walmart
		bh.FinishCallStarted(start)
	}
	if bh.TryAcquirePermission() {
		clock.Advance(80 * time.Millisecond)
		bh.FinishCall()
	}
	// Output:
	// finished, ran 120ms
	// finished, ran 0s
}

// A keyed call that had to wait takes its start once granted, in its
// OnDone callback: its wait is not part of its CallDuration.
func ExampleLease_StartCall() {
	clock := testkit.NewVirtualClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	registry, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: 10},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	registry.OnEvent(func(e bulkhead.Event) {
		switch e.Type {
		case bulkhead.CallPermitted:
			fmt.Println("permitted after waiting", e.Wait)
		case bulkhead.CallFinished:
			fmt.Println("finished, ran", e.CallDuration)
		}
	})

	first, _ := registry.TryAcquirePermission("walmart", bulkhead.CallOptions{})   // its start is taken at the grant
	a, lease := registry.AcquirePermissionAsync("walmart", bulkhead.CallOptions{}) // queued behind first
	a.OnDone(func(err error) {
		if err != nil {
			return
		}
		lease.StartCall()
	})
	clock.Advance(time.Second)
	first.FinishCall() // grants a
	clock.Advance(250 * time.Millisecond)
	lease.FinishCall()
	// Output:
	// permitted after waiting 0s
	// finished, ran 1s
	// permitted after waiting 1s
	// finished, ran 250ms
}

// AllMetrics is what the metrics exporters read at each scrape: every
// bulkhead of the registry, in name order.
func ExampleRegistry_AllMetrics() {
	registry, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	carrefour, _ := registry.Get("carrefour")
	walmart, _ := registry.Get("walmart")
	walmart.TryAcquirePermission()
	defer walmart.FinishCall()
	carrefour.TryAcquirePermission()
	defer carrefour.FinishCall()
	carrefour.TryAcquirePermission()
	defer carrefour.FinishCall()

	for name, m := range registry.AllMetrics() {
		fmt.Println(name, m.InFlightCalls, "of", m.MaxAllowedConcurrentCalls)
	}
	// Output:
	// carrefour 2 of 20
	// walmart 1 of 20
}
