package testkit_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// sendOrder is an rxgo pipeline that sends one order to a partner through
// the partner's bulkhead: it waits for a permit (bounded by the bulkhead's
// MaxWaitDuration), "sends" for sendTime, then gives the permit back.
func sendOrder(bh *bulkhead.Semaphore, order string, sendTime time.Duration) rxgo.Observable {
	return rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
		if err := bh.AcquirePermission(ctx); err != nil {
			rxgo.Error(err).SendContext(ctx, next)
			return
		}
		defer bh.FinishCall()
		select {
		case <-time.After(sendTime): // the partner's response time
			rxgo.Of(order+" sent").SendContext(ctx, next)
		case <-ctx.Done():
		}
	}})
}

// TestRxgoPipelineUnderSynctest is the synctest style: no injected clock.
// Inside the bubble the bulkhead's real clock is virtual, so the 50 ms wait
// timeout and the 100 ms response take no real time, and time.Since gives
// exact virtual durations.
func TestRxgoPipelineUnderSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		walmart, err := bulkhead.New("walmart", bulkhead.Config{
			MaxConcurrentCalls: 1,
			MaxWaitDuration:    50 * time.Millisecond,
			MaxQueuedCalls:     bulkhead.Unbounded,
		})
		if err != nil {
			t.Fatal(err)
		}
		testkit.CheckPermits(t, walmart) // runs inside the bubble, at the end
		begin := time.Now()

		first := testkit.Observe(sendOrder(walmart, "order-1", 100*time.Millisecond))
		synctest.Wait() // order-1 holds the permit
		second := testkit.Observe(sendOrder(walmart, "order-2", 100*time.Millisecond))

		if !second.Await(time.Minute) {
			t.Fatalf("order-2 still running: %v", second)
		}
		if d := time.Since(begin); d != 50*time.Millisecond {
			t.Errorf("order-2 was rejected after %v, want the 50ms wait timeout", d)
		}
		second.AssertNoValues(t)
		second.AssertError(t, bulkhead.ErrBulkheadFull)
		var fe *bulkhead.FullError
		if !errors.As(second.Err(), &fe) || fe.Reason != bulkhead.WaitTimeout {
			t.Errorf("order-2 failed with %v, want a WaitTimeout", second.Err())
		}

		if !first.Await(time.Minute) {
			t.Fatalf("order-1 still running: %v", first)
		}
		first.AssertResult(t, "order-1 sent")
		if d := time.Since(begin); d != 100*time.Millisecond {
			t.Errorf("order-1 finished after %v, want 100ms", d)
		}
	})
}
