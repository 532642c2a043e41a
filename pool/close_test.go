package pool_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestCloseDrainsQueuedAndRunningTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 2, CoreWorkers: 2, QueueCapacity: 5, KeepAlive: time.Minute, MaxQueueWait: bulkhead.NoTimeout})
		g := newPoolGate(t)
		var fs []*pool.Future[int]
		for i := range 6 {
			fs = append(fs, pool.Submit(context.Background(), p, poolTaskWaitingOn(g, i)))
		}
		closed := make(chan error, 1)
		go func() { closed <- p.Close(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-closed:
			t.Fatalf("Close returned %v while tasks were still running", err)
		default:
		}
		late := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 99))
		if late.Err() != pool.ErrClosed {
			t.Fatalf("Submit during Close: Err() = %v, want ErrPoolClosed", late.Err())
		}
		g.open()
		if err := <-closed; err != nil {
			t.Fatalf("Close = %v, want nil after draining", err)
		}
		for i, f := range fs {
			if !f.Ran() || f.Value() != i || f.Err() != nil {
				t.Fatalf("task %d after a draining Close: ran %v, %v, %v", i, f.Ran(), f.Value(), f.Err())
			}
		}
		if m := p.Metrics(); m.PoolSize != 0 {
			t.Fatalf("%d workers after Close, want 0 (core workers retire too)", m.PoolSize)
		}
	})
}

func TestCloseCancelsWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 2, MaxQueueWait: bulkhead.NoTimeout})
		events := testkit.RecordEvents(t, p)
		running := pool.Submit(context.Background(), p, func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 1, context.Cause(ctx)
		})
		synctest.Wait()
		queued := pool.Submit(context.Background(), p, func(context.Context) (int, error) { panic("must not run") })
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		if err := p.Close(ctx); err != context.DeadlineExceeded {
			t.Fatalf("Close = %v, want DeadlineExceeded", err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Fatalf("Close gave up after %v, want 1s", waited)
		}
		if err := queued.Err(); !errors.Is(err, bulkhead.ErrCancelled) || !errors.Is(err, pool.ErrClosed) || queued.Ran() {
			t.Fatalf("queued task: Err() = %v (ran %v), want a withdrawal matching ErrCancelled and ErrPoolClosed", err, queued.Ran())
		}
		if v, err := running.Get(context.Background()); v != 1 || err != pool.ErrClosed {
			t.Fatalf("running task: %v, %v; want its context cancelled with cause ErrPoolClosed", v, err)
		}
		if err := p.Close(context.Background()); err != nil {
			t.Fatalf("second Close = %v, want nil once the running task returned", err)
		}
		if want := []string{"permitted", "cancelled", "finished"}; !slices.Equal(events.Strings(), want) {
			t.Fatalf("events %v, want %v", events.Strings(), want)
		}
	})
}

func TestCloseWithDoneContextCancelsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
		started := make(chan struct{})
		f := pool.Submit(context.Background(), p, func(ctx context.Context) (int, error) {
			close(started)
			<-ctx.Done()
			return 0, ctx.Err()
		})
		<-started
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := p.Close(ctx); err != context.Canceled {
			t.Fatalf("Close = %v, want Canceled", err)
		}
		if _, err := f.Get(context.Background()); err != context.Canceled {
			t.Fatalf("task: %v, want its context cancelled", err)
		}
	})
}

func TestCloseOfIdlePoolReturnsAtOnceAndIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 2, CoreWorkers: 2, KeepAlive: time.Hour})
		if _, err := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 1, nil }).Get(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the worker is idle
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // a done context must not matter when there is nothing to cancel
		for range 2 {
			if err := p.Close(ctx); err != nil {
				t.Fatalf("Close = %v", err)
			}
		}
		synctest.Wait()
		if m := p.Metrics(); m.PoolSize != 0 {
			t.Fatalf("%+v after Close, want no worker", m)
		}
		if err := p.Close(context.Background()); err != nil {
			t.Fatalf("Close of a stopped pool = %v", err)
		}
	})
}
