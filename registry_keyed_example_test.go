package bulkhead_test

import (
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// One bulkhead per tenant, for tenant keys taken from requests: idle
// tenants' bulkheads are evicted, and at most two exist; other tenants
// share the catch-all.
func ExampleRegistry_AcquirePermissionAsync() {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 2},
		bulkhead.WithIdleTimeout(time.Minute),
		bulkhead.WithMaxBulkheads(2, bulkhead.Config{MaxConcurrentCalls: 1}))
	if err != nil {
		log.Fatal(err)
	}
	serve := func(tenant string) {
		a, lease := reg.AcquirePermissionAsync(tenant, bulkhead.CallOptions{})
		<-a.Done() // or a.OnDone(...) to wait without a goroutine
		if err := a.Err(); err != nil {
			fmt.Println(tenant, "rejected:", err)
			return
		}
		defer lease.FinishCall() // the permit goes back through the Lease
		fmt.Println(tenant, "admitted by", lease.Name())
	}
	serve("acme")
	serve("globex")
	serve("initech") // a third tenant: beyond the cap
	fmt.Printf("%+v\n", reg.Stats())
	// Output:
	// acme admitted by acme
	// globex admitted by globex
	// initech admitted by catch-all
	// {Bulkheads:3 Evictions:0 CatchAllCalls:1}
}

// An idle bulkhead is evicted and created again, with full permits, on the
// next call for its key. Here on a virtual clock.
func ExampleWithIdleTimeout() {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 2},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)),
		bulkhead.WithIdleTimeout(time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	reg.OnEvict(func(name string) { fmt.Println("evicted", name) })
	call := func(key string) {
		a, lease := reg.AcquirePermissionAsync(key, bulkhead.CallOptions{})
		if a.Err() == nil {
			lease.FinishCall()
		}
	}
	call("10.0.0.7")
	pinned, _ := reg.Get("billing") // Get pins: never evicted
	_ = pinned
	clock.Advance(2 * time.Minute)
	fmt.Println(len(reg.All()), "bulkhead left:", reg.All()[0].Name())
	call("10.0.0.7")
	fmt.Printf("%+v\n", reg.Stats())
	// Output:
	// evicted 10.0.0.7
	// 1 bulkhead left: billing
	// {Bulkheads:2 Evictions:1 CatchAllCalls:0}
}

// Keys choose their configuration when their bulkhead is created.
func ExampleWithKeyConfig() {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 2},
		bulkhead.WithConfig("premium", bulkhead.Config{MaxConcurrentCalls: 20}),
		bulkhead.WithKeyConfig(func(key string) string {
			if strings.HasPrefix(key, "premium/") {
				return "premium"
			}
			return bulkhead.DefaultConfigName
		}))
	if err != nil {
		log.Fatal(err)
	}
	for _, key := range []string{"premium/acme", "free/bob"} {
		a, lease := reg.AcquirePermissionAsync(key, bulkhead.CallOptions{})
		if a.Err() == nil {
			lease.ReleasePermission()
		}
	}
	for _, bh := range reg.All() {
		fmt.Println(bh.Name(), bh.Config().MaxConcurrentCalls)
	}
	// Output:
	// free/bob 2
	// premium/acme 20
}

// Keys beyond the cap go to the catch-all; Get of a new name fails instead.
func ExampleWithMaxBulkheads() {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 2},
		bulkhead.WithMaxBulkheads(1, bulkhead.Config{MaxConcurrentCalls: 10}))
	if err != nil {
		log.Fatal(err)
	}
	_, err = reg.Get("first")
	fmt.Println(err)
	_, err = reg.Get("second")
	fmt.Println(err)
	// Output:
	// <nil>
	// bulkhead "second": registry is full: it holds 1 bulkheads (WithMaxBulkheads)
}

// A middleware that knows each key's tier names the configuration on every
// call; it is used only when the key's bulkhead is created.
func ExampleCallOptions() {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 2},
		bulkhead.WithConfig("gold", bulkhead.Config{MaxConcurrentCalls: 50}))
	if err != nil {
		log.Fatal(err)
	}
	a, lease := reg.AcquirePermissionAsync("tenant-42", bulkhead.CallOptions{ConfigName: "gold"})
	if a.Err() == nil {
		defer lease.FinishCall()
	}
	fmt.Println(reg.All()[0].Name(), reg.All()[0].Config().MaxConcurrentCalls)
	// Output:
	// tenant-42 50
}

// Keys longer than the maximum key length never get a bulkhead of their
// own in a capped registry: the catch-all admits them.
func ExampleWithMaxKeyLength() {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 2},
		bulkhead.WithMaxBulkheads(1000, bulkhead.Config{MaxConcurrentCalls: 10}),
		bulkhead.WithMaxKeyLength(16))
	if err != nil {
		log.Fatal(err)
	}
	lease, err := reg.TryAcquirePermission("a-key-of-more-than-16-bytes", bulkhead.CallOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer lease.FinishCall()
	fmt.Println(lease.Name())
	// Output: catch-all
}
