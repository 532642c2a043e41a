package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// A call of weight k takes k permits of the bulkhead: a 10 MB EDI batch
// may cost 8 where an acknowledgement costs 1. A light call behind a heavy
// one that does not fit yet still goes while permits are free (for at
// most MaxConcurrentCalls permits in all, so the heavy one is not
// starved), and a call heavier than the limit fails with ErrTooHeavy.
func ExampleSemaphore_Call() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{
		MaxConcurrentCalls: 10, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded,
	})
	bigDocument := walmart.Call(8)
	if bigDocument.TryAcquirePermission() {
		fmt.Println("in flight:", walmart.Metrics().InFlightCalls)
	}
	next := walmart.Call(8).AcquirePermissionAsync() // 2 free: it waits
	ack := walmart.AcquirePermissionAsync()          // 1 permit: it goes past
	fmt.Println("next:", next.Err(), "| ack granted:", ack.Granted())

	err := walmart.Call(11).AcquirePermission(context.Background())
	fmt.Println(errors.Is(err, bulkhead.ErrTooHeavy), errors.Is(err, bulkhead.ErrBulkheadFull))

	bigDocument.FinishCall() // 8 permits back: the next big one goes
	fmt.Println("next granted:", next.Granted(), "in flight:", walmart.Metrics().InFlightCalls)
	walmart.Call(8).FinishCall()
	walmart.FinishCall()
	// Output:
	// in flight: 8
	// next: bulkhead: permit acquisition pending | ack granted: true
	// true false
	// next granted: true in flight: 9
}
