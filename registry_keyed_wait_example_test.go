package bulkhead_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// A middleware-style caller waits for its key's permit in its own goroutine.
func ExampleRegistry_AcquirePermission() {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.WithIdleTimeout(time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	lease, err := reg.AcquirePermission(ctx, "tenant-7", bulkhead.CallOptions{})
	if err != nil {
		fmt.Println("rejected:", err) // a *FullError, or ctx's error
		return
	}
	defer lease.FinishCall()
	fmt.Println("admitted by", lease.Name())
	// Output: admitted by tenant-7
}

// A gRPC tap or a load shedder that must not queue asks without waiting.
func ExampleRegistry_TryAcquirePermission() {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.WithIdleTimeout(time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	first, err := reg.TryAcquirePermission("tenant-7", bulkhead.CallOptions{})
	fmt.Println(first.Name(), err)
	_, err = reg.TryAcquirePermission("tenant-7", bulkhead.CallOptions{})
	fmt.Println(err)
	first.FinishCall()
	// Output:
	// tenant-7 <nil>
	// bulkhead "tenant-7": full, does not permit further calls (no wait)
}

// Give a permit back exactly once: a second give-back through the same
// Lease panics rather than return a permit another call holds.
func ExampleLease() {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1})
	if err != nil {
		log.Fatal(err)
	}
	lease, err := reg.TryAcquirePermission("tenant-7", bulkhead.CallOptions{})
	if err != nil {
		log.Fatal(err)
	}
	lease.ReleasePermission() // granted, but the call did not run
	defer func() { fmt.Println(recover()) }()
	lease.FinishCall()
	// Output: bulkhead: Lease.FinishCall on a Lease that holds no permit (the zero Lease of a failed call, or a Lease already given back)
}
