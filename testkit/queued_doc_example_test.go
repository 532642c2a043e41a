package testkit_test

import (
	"testing"
	"time"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/observable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// TestDocAwaitQueuedBeforeAdvancing is the block of docs/testing.md on
// AwaitQueued: rxgo asks for the permits on goroutines of its own, so the
// test waits until both observations are queued before it moves the
// virtual clock past their wait.
func TestDocAwaitQueuedBeforeAdvancing(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Time{})
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{
		MaxConcurrentCalls: 1,
		MaxWaitDuration:    50 * time.Millisecond,
		MaxQueuedCalls:     10,
	}, bulkhead.WithClock(clock))
	testkit.CheckPermits(t, walmart)
	walmart.TryAcquirePermission() // a call in flight holds the only permit

	orders := observable.Bulkhead(walmart, rxgo.Just("PO-1")())
	first, second := testkit.Observe(orders), testkit.Observe(orders)
	testkit.AwaitQueued(t, walmart, 2) // both asked, on rxgo's goroutines

	clock.Advance(50 * time.Millisecond) // both waits time out
	for _, o := range []*testkit.TestObserver{first, second} {
		o.Await(time.Second)
		o.AssertError(t, bulkhead.ErrBulkheadFull)
	}
	walmart.FinishCall()
}
