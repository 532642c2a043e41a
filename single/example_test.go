package single_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/single"
)

func ExampleBulkhead() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1})

	ack := single.Bulkhead(walmart, rxgo.JustItem("997")).
		Map(func(_ context.Context, v any) (any, error) { return "ack " + v.(string), nil })

	// The same Single can be observed again: each Get takes its own permit.
	for range 2 {
		item, err := ack.Get()
		fmt.Println(item.V, err)
	}

	walmart.TryAcquirePermission() // another call holds the only permit
	item, _ := ack.Get()
	fmt.Println(errors.Is(item.E, bulkhead.ErrBulkheadFull))
	walmart.ReleasePermission()
	// Output:
	// ack 997 <nil>
	// ack 997 <nil>
	// true
}

func ExampleTransformer() {
	walmart, _ := bulkhead.New("walmart", bulkhead.DefaultConfig())
	viaWalmart := single.Transformer(walmart)

	item, err := viaWalmart(rxgo.JustItem("asn")).Get()
	fmt.Println(item.V, err, walmart.Metrics().InFlightCalls)
	// Output:
	// asn <nil> 0
}
