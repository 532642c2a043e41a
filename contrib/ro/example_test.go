package ro_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/samber/ro"

	bulkhead "github.com/rxbulkhead/bulkhead"
	bro "github.com/rxbulkhead/bulkhead/contrib/ro"
)

// Each subscription runs the source under a permit of the partner's
// bulkhead; the permit is back when the subscriber sees the end.
func ExampleBulkhead() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 2})
	orders := bro.Bulkhead(walmart, ro.Just("PO-1", "PO-2"))
	orders.Subscribe(ro.NewObserver(
		func(po string) { fmt.Println("sent", po, "in flight:", walmart.Metrics().InFlightCalls) },
		func(err error) { fmt.Println("error:", err) },
		func() { fmt.Println("done, in flight:", walmart.Metrics().InFlightCalls) },
	))
	// Output:
	// sent PO-1 in flight: 1
	// sent PO-2 in flight: 1
	// done, in flight: 0
}

// A full bulkhead without a wait rejects the subscription with one error;
// the source is never subscribed.
func ExampleBulkhead_rejected() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	walmart.TryAcquirePermission() // another call holds the only permit
	_, err := ro.Collect(bro.Bulkhead(walmart, ro.Just(1)))
	fmt.Println(errors.Is(err, bulkhead.ErrBulkheadFull))
	walmart.ReleasePermission()
	// Output:
	// true
}

// The operator form, for ro.Pipe: one value per partner, applied to many
// pipelines.
func ExampleTransformer() {
	target, _ := bulkhead.New("target", bulkhead.Config{MaxConcurrentCalls: 4})
	toTarget := bro.Transformer[int](target)
	totals, err := ro.Collect(ro.Pipe2(
		ro.Just(10, 20),
		toTarget,
		ro.Map(func(cents int) string { return fmt.Sprintf("$%d.00", cents) }),
	))
	fmt.Println(totals, err)
	// Output:
	// [$10.00 $20.00] <nil>
}

// A subscription waiting for its permit is withdrawn by Unsubscribe: no
// permit is consumed and the source never runs.
func ExampleBulkhead_unsubscribeWhilePending() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	walmart.TryAcquirePermission()
	sub := bro.Bulkhead(walmart, ro.Just(1)).Subscribe(ro.NoopObserver[int]())
	fmt.Println("queued:", walmart.Metrics().QueuedCalls)
	sub.Unsubscribe()
	fmt.Println("queued:", walmart.Metrics().QueuedCalls)
	walmart.ReleasePermission()
	// Output:
	// queued: 1
	// queued: 0
}
