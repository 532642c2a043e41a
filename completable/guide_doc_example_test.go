package completable_test

import (
	"context"
	"errors"
	"fmt"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
)

// sendEDI stands for the call that sends one EDI document to a partner.
func sendEDI(ctx context.Context, doc string) error {
	fmt.Println("sending", doc)
	return ctx.Err()
}

// A call with no value, through the partner's bulkhead (the Completable
// block of docs/guide.md).
func ExampleBulkhead_await() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 20})
	ctx := context.Background()

	send := completable.Bulkhead(walmart, completable.FromFunc(func(ctx context.Context) error {
		return sendEDI(ctx, "810 invoice")
	}))
	err := completable.Await(ctx, send)
	if errors.Is(err, bulkhead.ErrBulkheadFull) {
		fmt.Println("walmart has too many calls in flight: retry later")
		return
	}
	fmt.Println("sent:", err)
	// Output:
	// sending 810 invoice
	// sent: <nil>
}
