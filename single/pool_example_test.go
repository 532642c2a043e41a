package single_test

import (
	"context"
	"fmt"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/single"
)

func ExampleFromPool() {
	soap, _ := pool.New("legacy-soap", pool.Config{MaxWorkers: 4, QueueCapacity: 16, MaxQueueWait: bulkhead.NoTimeout})
	defer soap.Close(context.Background())

	// getQuote blocks and ignores contexts: it runs on the pool's workers.
	getQuote := func(context.Context) (float64, error) { return 12.5, nil }
	quote := single.FromPool(soap, getQuote).
		Map(func(_ context.Context, v any) (any, error) { return fmt.Sprintf("quote %.2f EUR", v), nil })

	it, err := quote.Get(rxgo.WithContext(context.Background()))
	fmt.Println(it.V, it.E, err)
	// Output:
	// quote 12.50 EUR <nil> <nil>
}
