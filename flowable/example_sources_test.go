package flowable_test

import "github.com/rxbulkhead/bulkhead/flowable"

func ExampleJust() {
	flowable.Just("invoice", "order").Subscribe(printer[string]())
	// Output:
	// next invoice
	// next order
	// complete
}

func ExampleFromSlice() {
	docs := []string{"ORDERS", "DESADV", "INVOIC"}
	flowable.FromSlice(docs).Subscribe(printer[string]())
	// Output:
	// next ORDERS
	// next DESADV
	// next INVOIC
	// complete
}
