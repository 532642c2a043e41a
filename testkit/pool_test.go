package testkit_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestClosePoolDrainsAndClosesThePoolAtCleanup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := pool.New("soap", pool.Config{MaxWorkers: 2, QueueCapacity: 4, MaxQueueWait: bulkhead.NoTimeout})
		if err != nil {
			t.Fatal(err)
		}
		var futures []*pool.Future[int]
		f := runFake(func(tb *fakeTB) {
			testkit.ClosePool(tb, p)
			for i := range 4 {
				futures = append(futures, pool.Submit(context.Background(), p, func(context.Context) (int, error) {
					time.Sleep(time.Second) // fake time: still running when the test body ends
					return i, nil
				}))
			}
		})
		wantPass(t, f)
		for i, fu := range futures {
			if err := fu.Err(); err != nil || fu.Value() != i {
				t.Errorf("task %d: value %d, err %v: the cleanup must drain, not cancel", i, fu.Value(), err)
			}
		}
		if m := p.Metrics(); m.PoolSize != 0 || m.QueueDepth != 0 {
			t.Errorf("after the cleanup: %+v, want no worker and no queued task", m)
		}
		if err := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 0, nil }).Err(); !errors.Is(err, pool.ErrClosed) {
			t.Errorf("Submit after the cleanup: %v, want ErrPoolClosed", err)
		}
	})
}

func TestClosePoolPanicsOnNilPool(t *testing.T) {
	defer func() {
		if r := recover(); r != "testkit: ClosePool called with a nil *pool.Pool" {
			t.Errorf("recovered %v", r)
		}
	}()
	testkit.ClosePool(t, nil)
}
