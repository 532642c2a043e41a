package bulkhead_test

import (
	"fmt"

	"github.com/rxbulkhead/bulkhead"
)

// A CallCounter counts the calls of every bulkhead of a registry, including
// those created after it, from their first call.
func ExampleNewCallCounter() {
	registry := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1})
	counter := bulkhead.NewCallCounter(registry)
	defer counter.Close()

	walmart, _ := registry.Bulkhead("walmart") // created after the counter
	walmart.TryAcquirePermission()             // permitted
	walmart.TryAcquirePermission()             // rejected: the only permit is taken
	walmart.OnComplete()                       // finished

	fmt.Printf("%+v\n", counter.Counts("walmart"))
	// Output:
	// {Permitted:1 Rejected:1 Finished:1 Cancelled:0}
}
