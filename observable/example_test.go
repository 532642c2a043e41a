package observable_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/observable"
)

func ExampleBulkhead() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1})

	// Building the pipeline takes no permit; each Observe takes its own.
	orders := observable.Bulkhead(walmart, rxgo.Just("po-1", "po-2")()).
		Map(func(_ context.Context, v any) (any, error) { return strings.ToUpper(v.(string)), nil })

	// The consumer's context: cancelling it releases the permit.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for item := range orders.Observe(rxgo.WithContext(ctx)) {
		fmt.Println(item.V)
	}

	// While another call holds the only permit, an observation is rejected:
	// one error item, then the channel closes.
	walmart.TryAcquirePermission()
	for item := range orders.Observe(rxgo.WithContext(ctx)) {
		fmt.Println(errors.Is(item.E, bulkhead.ErrBulkheadFull), item.E)
	}
	walmart.ReleasePermission()
	// Output:
	// PO-1
	// PO-2
	// true bulkhead "walmart": full, does not permit further calls (no wait)
}

func ExampleTransformer() {
	walmart, _ := bulkhead.New("walmart", bulkhead.DefaultConfig())
	viaWalmart := observable.Transformer(walmart) // keep it with the partner

	send := func(doc string) rxgo.Observable { return viaWalmart(rxgo.Just(doc)()) }
	for _, obs := range []rxgo.Observable{send("850"), send("856")} {
		for item := range obs.Observe() {
			fmt.Println("sent", item.V)
		}
	}
	fmt.Println("in flight:", walmart.Metrics().InFlightCalls)
	// Output:
	// sent 850
	// sent 856
	// in flight: 0
}

func ExampleBulkhead_cancelAfterTake() {
	walmart, _ := bulkhead.New("walmart", bulkhead.DefaultConfig())

	// Take stops reading after two items and tells nobody upstream: the
	// subscription would hold its permit for ever without the cancel.
	ctx, cancel := context.WithCancel(context.Background())
	first2 := observable.Bulkhead(walmart, rxgo.Range(0, 1000)).Take(2, rxgo.WithContext(ctx))
	for item := range first2.Observe() {
		fmt.Println(item.V)
	}
	cancel() // releases the permit of the subscription Take abandoned
	// Output:
	// 0
	// 1
}

// An observation that waits for its permit is a queue record, not a parked
// goroutine: Observe returns at once, and the source is observed when a
// permit is given back.
func ExampleBulkhead_waiting() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{
		MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: 100,
	})
	walmart.TryAcquirePermission() // another call holds the only permit

	ch := observable.Bulkhead(walmart, rxgo.Just("po-1")()).Observe()
	fmt.Println("queued:", walmart.Metrics().QueuedCalls)

	walmart.FinishCall() // the other call ends: the waiting observation runs
	for item := range ch {
		fmt.Println(item.V)
	}
	fmt.Println("in flight:", walmart.Metrics().InFlightCalls)
	// Output:
	// queued: 1
	// po-1
	// in flight: 0
}
