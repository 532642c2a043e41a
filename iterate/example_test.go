package iterate_test

import (
	"context"
	"errors"
	"fmt"
	"slices"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/iterate"
)

// Sending a batch of invoices to a partner under its bulkhead: the loop
// holds one permit from its first value to its end.
func ExampleSeq() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	invoices := slices.Values([]string{"INV-1", "INV-2"})
	for inv, err := range iterate.Seq(context.Background(), walmart, invoices) {
		if err != nil {
			fmt.Println("not sent:", err)
			break
		}
		fmt.Println("sent", inv, "in flight:", walmart.Metrics().InFlightCalls)
	}
	fmt.Println("after the loop, in flight:", walmart.Metrics().InFlightCalls)
	// Output:
	// sent INV-1 in flight: 1
	// sent INV-2 in flight: 1
	// after the loop, in flight: 0
}

// A full bulkhead without a wait rejects the loop: its only pair carries
// the *bulkhead.FullError and the source is never ranged over.
func ExampleSeq_rejected() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	walmart.TryAcquirePermission() // another call holds the only permit
	for _, err := range iterate.Seq(context.Background(), walmart, slices.Values([]int{1})) {
		fmt.Println(errors.Is(err, bulkhead.ErrBulkheadFull), err)
	}
	walmart.ReleasePermission()
	// Output:
	// true bulkhead "walmart": full, does not permit further calls (no wait)
}

// A source that reports its own errors (pages of an API, rows of a query)
// keeps them: Seq2 passes its pairs on.
func ExampleSeq2() {
	target, _ := bulkhead.New("target", bulkhead.Config{MaxConcurrentCalls: 4})
	pages := func(yield func(string, error) bool) {
		if !yield("page 1", nil) {
			return
		}
		yield("", errors.New("page 2: 503"))
	}
	for page, err := range iterate.Seq2(context.Background(), target, pages) {
		if err != nil {
			fmt.Println("stopped:", err)
			break
		}
		fmt.Println("got", page)
	}
	// Output:
	// got page 1
	// stopped: page 2: 503
}
