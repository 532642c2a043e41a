package maybe_test

import (
	"fmt"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/maybe"
)

func ExampleBulkhead() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1})

	firstOpen := func(v any) bool { return v.(string) != "closed" }
	found := maybe.Bulkhead(walmart, rxgo.Just("closed", "po-7")().Find(firstOpen))
	none := maybe.Bulkhead(walmart, rxgo.Just("closed")().Find(firstOpen))

	item, _ := found.Get()
	fmt.Println(item.V)
	item, _ = none.Get()
	fmt.Println(item == rxgo.OptionalSingleEmpty, walmart.Metrics().InFlightCalls)
	// Output:
	// po-7
	// true 0
}

func ExampleTransformer() {
	walmart, _ := bulkhead.New("walmart", bulkhead.DefaultConfig())
	viaWalmart := maybe.Transformer(walmart)

	item, err := viaWalmart(rxgo.Just("po-1")().First()).Get()
	fmt.Println(item.V, err)
	// Output:
	// po-1 <nil>
}
