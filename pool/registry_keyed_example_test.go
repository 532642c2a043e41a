package pool_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/rxbulkhead/bulkhead/pool"
)

// A pool per tenant, bounded: idle pools are evicted and closed, tenants
// beyond the cap share the catch-all pool.
func ExampleSubmitKeyed() {
	reg, err := pool.NewRegistry(pool.Config{MaxWorkers: 2},
		pool.WithIdleTimeout(time.Minute),
		pool.WithMaxPools(2, pool.Config{MaxWorkers: 1}))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())
	for _, tenant := range []string{"acme", "globex", "initech"} {
		v, err := pool.SubmitKeyed(context.Background(), reg, tenant, pool.CallOptions{}, func(context.Context) (string, error) {
			return "report for " + tenant, nil
		}).Get(context.Background())
		fmt.Println(v, err)
	}
	fmt.Printf("%+v\n", reg.Stats())
	// Output:
	// report for acme <nil>
	// report for globex <nil>
	// report for initech <nil>
	// {Pools:3 Evictions:0 CatchAllCalls:1}
}

// A tenant's pool is created from the configuration the call names; the
// names of the configurations are the registry's.
func ExampleCallOptions() {
	reg, err := pool.NewRegistry(pool.Config{MaxWorkers: 1},
		pool.WithConfig("batch", pool.Config{MaxWorkers: 8}))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())
	_, err = pool.SubmitKeyed(context.Background(), reg, "acme/batch", pool.CallOptions{ConfigName: "batch"},
		func(context.Context) (int, error) { return 0, nil }).Get(context.Background())
	p, _ := reg.Find("acme/batch")
	fmt.Println(err, p.Config().MaxWorkers)
	// Output: <nil> 8
}

// Keys longer than the maximum key length never get a pool of their own in
// a capped registry: they run on the catch-all.
func ExampleWithMaxKeyLength() {
	reg, err := pool.NewRegistry(pool.Config{MaxWorkers: 2},
		pool.WithMaxPools(1000, pool.Config{MaxWorkers: 1}),
		pool.WithMaxKeyLength(16))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())
	_, err = pool.SubmitKeyed(context.Background(), reg, "a-key-of-more-than-16-bytes", pool.CallOptions{},
		func(context.Context) (int, error) { return 0, nil }).Get(context.Background())
	fmt.Printf("%v %+v\n", err, reg.Stats())
	// Output: <nil> {Pools:1 Evictions:0 CatchAllCalls:1}
}
