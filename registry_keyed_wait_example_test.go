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
	lease, err := reg.AcquirePermission(context.Background(), "tenant-7", "")
	if err != nil {
		log.Fatal(err)
	}
	_, err = reg.TryAcquirePermission("tenant-7", "")
	fmt.Println(err)
	lease.FinishCall()
	// Output: bulkhead "tenant-7": full, does not permit further calls (no wait)
}
