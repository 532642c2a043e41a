package pool_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
)

// User code that re-enters the pool while the pool is half-way through
// deciding or delivering something: Close and Cancel from a task or a
// callback, Submit from a callback that Close runs.

func endedContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestTaskThatClosesItsOwnPoolWithAnEndedContextFinishesAndThePoolStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := pool.New("p", pool.Config{MaxWorkers: 1, QueueCapacity: 2, MaxQueueWait: bulkhead.NoTimeout})
		if err != nil {
			t.Fatal(err)
		}
		g := newPoolGate(t)
		var closeErr error
		closer := pool.Submit(context.Background(), p, func(ctx context.Context) (int, error) {
			<-g.c
			closeErr = p.Close(endedContext()) // withdraws the queued task, cancels this one
			return 1, context.Cause(ctx)
		})
		queued := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 2, nil })
		g.open()
		synctest.Wait()
		if !errors.Is(closeErr, context.Canceled) {
			t.Fatalf("Close from the task = %v, want context.Canceled", closeErr)
		}
		if v, err := closer.Value(), closer.Err(); !closer.Ran() || v != 1 || err != pool.ErrClosed {
			t.Fatalf("the closing task: ran %v, %d, %v; want 1 and its context's cause ErrClosed", closer.Ran(), v, err)
		}
		if err := queued.Err(); !errors.Is(err, bulkhead.ErrCancelled) || !errors.Is(err, pool.ErrClosed) {
			t.Fatalf("the queued task: %v, want withdrawn by Close", err)
		}
		if err := p.Close(context.Background()); err != nil {
			t.Fatalf("second Close = %v, want nil: the pool stopped", err)
		}
		if m := p.Metrics(); m.PoolSize != 0 {
			t.Fatalf("after Close: %+v", m)
		}
	})
}

func TestCallbackOnAWorkerThatClosesThePoolAndSubmitsIsRefusedAndThePoolStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := pool.New("p", pool.Config{MaxWorkers: 1, QueueCapacity: 2, MaxQueueWait: bulkhead.NoTimeout})
		if err != nil {
			t.Fatal(err)
		}
		g := newPoolGate(t)
		first := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		queued := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 2))
		var late *pool.Future[int]
		var closeErr error
		first.OnDone(func(int, error) {
			closeErr = p.Close(endedContext())
			late = pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 3, nil })
		})
		var queuedSawClosed bool
		queued.OnDone(func(_ int, err error) {
			// Runs inside the Close above, on the worker: re-enter again.
			queuedSawClosed = pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 4, nil }).Err() == pool.ErrClosed
		})
		g.open()
		synctest.Wait()
		if !errors.Is(closeErr, context.Canceled) || first.Value() != 1 {
			t.Fatalf("Close from the callback = %v, first = %d", closeErr, first.Value())
		}
		if !errors.Is(queued.Err(), pool.ErrClosed) || !queuedSawClosed {
			t.Fatalf("queued: %v, nested Submit refused: %v", queued.Err(), queuedSawClosed)
		}
		if late.Err() != pool.ErrClosed {
			t.Fatalf("Submit after Close from a callback: %v, want ErrClosed", late.Err())
		}
		if err := p.Close(context.Background()); err != nil {
			t.Fatalf("second Close = %v", err)
		}
	})
}

func TestCancelOfItsOwnFutureFromTheTaskAndFromACallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
		var self *pool.Future[int]
		ready := make(chan struct{})
		var cancelledFromTask bool
		self = pool.Submit(context.Background(), p, func(ctx context.Context) (int, error) {
			<-ready
			cancelledFromTask = self.Cancel() // running: cancels ctx, reports false
			<-ctx.Done()
			return 1, context.Cause(ctx)
		})
		var cancelledFromCallback = true
		self.OnDone(func(int, error) { cancelledFromCallback = self.Cancel() })
		close(ready)
		synctest.Wait()
		if cancelledFromTask || cancelledFromCallback {
			t.Fatalf("Cancel reported true from the task (%v) or its callback (%v)", cancelledFromTask, cancelledFromCallback)
		}
		if !self.Ran() || self.Err() != bulkhead.ErrCancelled || self.Value() != 1 {
			t.Fatalf("ran %v, %d, %v; want the task's own result with cause ErrCancelled", self.Ran(), self.Value(), self.Err())
		}
	})
}
