package pool_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
)

func TestFutureDeliversValueAndErrorToEveryCallbackOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
		g := newPoolGate(t)
		boom := errors.New("boom")
		f := pool.Submit(context.Background(), p, func(ctx context.Context) (int, error) {
			<-g.c
			return 42, boom
		})
		if f.Err() != bulkhead.ErrPending || f.Ran() || f.Value() != 0 {
			t.Fatalf("pending future: Err %v, Ran %v, Value %v", f.Err(), f.Ran(), f.Value())
		}
		calls := make(chan string, 4)
		f.OnDone(func(v int, err error) { calls <- fmt.Sprint("a", v, err) })
		f.OnDone(func(v int, err error) { calls <- fmt.Sprint("b", v, err) })
		g.open()
		<-f.Done()
		// Done closes before the worker runs a and b: wait for them, so
		// that c is registered on a Future whose callbacks have all run
		// and runs at once, here.
		synctest.Wait()
		f.OnDone(func(v int, err error) { calls <- fmt.Sprint("c", v, err) })
		close(calls)
		if got, want := slices.Collect(poolDrain(calls)), []string{"a42 boom", "b42 boom", "c42 boom"}; !slices.Equal(got, want) {
			t.Fatalf("callbacks %v, want %v", got, want)
		}
		if f.Value() != 42 || f.Err() != boom || !f.Ran() {
			t.Fatalf("Value %v Err %v Ran %v", f.Value(), f.Err(), f.Ran())
		}
	})
}

func TestGetReturnsCtxErrWithoutAffectingTheTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
		g := newPoolGate(t)
		f := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 5))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if v, err := f.Get(ctx); v != 0 || err != context.DeadlineExceeded {
			t.Fatalf("Get = %v, %v, want 0, DeadlineExceeded", v, err)
		}
		g.open()
		if v, err := f.Get(context.Background()); v != 5 || err != nil {
			t.Fatalf("task after Get gave up: %v, %v", v, err)
		}
	})
}

func TestTaskPanicBecomesPanicErrorAndWorkerSurvives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, CoreWorkers: 1})
		cause := errors.New("legacy client exploded")
		f := pool.Submit(context.Background(), p, func(context.Context) (int, error) { panic(cause) })
		var pe *pool.PanicError
		if _, err := f.Get(context.Background()); !errors.As(err, &pe) || !errors.Is(err, cause) || !strings.Contains(string(pe.Stack), "TestTaskPanicBecomesPanicErrorAndWorkerSurvives") {
			t.Fatalf("Err() = %v, want a *PanicError wrapping the value with the stack", err)
		}
		if msg := pe.Error(); msg != "pool: task panicked: legacy client exploded" {
			t.Fatalf("message %q", msg)
		}
		synctest.Wait()
		if n := p.Metrics().PoolSize; n != 1 {
			t.Fatalf("%d workers after a panic, want the worker kept", n)
		}
		if v, err := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 1, nil }).Get(context.Background()); v != 1 || err != nil {
			t.Fatalf("task after a panic: %v, %v", v, err)
		}
	})
}

func TestCallbackMaySubmitToTheSamePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout})
		second := make(chan *pool.Future[int], 1)
		pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 1, nil }).
			OnDone(func(v int, _ error) {
				second <- pool.Submit(context.Background(), p, func(context.Context) (int, error) { return v + 1, nil })
			})
		if v, err := (<-second).Get(context.Background()); v != 2 || err != nil {
			t.Fatalf("Get = %v, %v", v, err)
		}
	})
}

func poolDrain[T any](c <-chan T) func(func(T) bool) {
	return func(yield func(T) bool) {
		for v := range c {
			if !yield(v) {
				return
			}
		}
	}
}
