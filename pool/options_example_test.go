package pool_test

import (
	"fmt"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Pools for blocking code take their defaults from resilience4j; size
// MaxWorkers for the dependency, not for the CPUs.
func ExampleDefaultConfig() {
	cfg := pool.DefaultConfig()
	cfg.MaxWorkers, cfg.CoreWorkers = 8, 2 // the SOAP service takes 8 calls at once
	fmt.Println(cfg.Validate() == nil, cfg.QueueCapacity)
	// Output: true 100
}

// Every pool of a Registry is created from the defaults or a named
// configuration, with the same options.
func ExampleWithConfig() {
	reg, err := pool.NewRegistry(pool.Config{MaxWorkers: 4},
		pool.WithConfig("legacy", pool.Config{MaxWorkers: 2, QueueCapacity: 10, MaxQueueWait: bulkhead.NoTimeout}),
		pool.WithClock(testkit.NewVirtualClock(time.Unix(0, 0)))) // an Option applies to every pool
	if err != nil {
		panic(err)
	}
	soap, _ := reg.GetWithConfig("soap", "legacy")
	fmt.Println(soap.Metrics().MaxWorkers, soap.Metrics().QueueCapacity)
	// Output: 2 10
}
