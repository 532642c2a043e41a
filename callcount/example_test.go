package callcount_test

import (
	"fmt"
	"log"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/callcount"
)

// A Counter counts the calls of every bulkhead of a registry, including
// those created after it, from their first call.
func ExampleNew() {
	registry, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1})
	if err != nil {
		log.Fatal(err)
	}
	counter := callcount.New(registry)
	defer counter.Close()

	walmart, _ := registry.Get("walmart") // created after the counter
	walmart.TryAcquirePermission()        // permitted
	walmart.TryAcquirePermission()        // rejected: the only permit is taken
	walmart.FinishCall()                  // finished

	fmt.Printf("%+v\n", counter.Counts("walmart"))
	// Output:
	// {Permitted:1 Rejected:1 Finished:1 Cancelled:0}
}
