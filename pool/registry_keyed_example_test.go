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
