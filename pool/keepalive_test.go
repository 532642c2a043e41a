package pool_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestPoolStartsWorkersLazilyAndReusesIdleOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 4, CoreWorkers: 4, QueueCapacity: 1, KeepAlive: time.Minute, MaxQueueWait: bulkhead.NoTimeout})
		if m := p.Metrics(); m.PoolSize != 0 {
			t.Fatalf("a new pool has %d workers, want 0", m.PoolSize)
		}
		for i := range 3 {
			f := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return i, nil })
			if v, err := f.Get(context.Background()); v != i || err != nil {
				t.Fatalf("task %d: Get = %v, %v", i, v, err)
			}
			synctest.Wait() // the worker is idle again
		}
		if m := p.Metrics(); m.PoolSize != 1 || m.ActiveWorkers != 0 {
			t.Fatalf("after 3 sequential tasks: %+v, want one idle worker", m)
		}
		if got := poolGoroutines(); got != 1 {
			t.Fatalf("3 sequential tasks left %d goroutines, want 1 idle worker", got)
		}
	})
}

func TestIdleWorkersAboveCoreRetireAfterKeepAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 3, CoreWorkers: 1, KeepAlive: time.Second})
		g := newPoolGate(t)
		var fs []*pool.Future[int]
		for i := range 3 {
			fs = append(fs, pool.Submit(context.Background(), p, poolTaskWaitingOn(g, i)))
		}
		g.open()
		for _, f := range fs {
			<-f.Done()
		}
		synctest.Wait()
		if m := p.Metrics(); m.PoolSize != 3 || m.ActiveWorkers != 0 {
			t.Fatalf("right after the tasks: %+v, want 3 idle workers", m)
		}
		time.Sleep(time.Second - time.Nanosecond) // virtual time: synctest bubble
		synctest.Wait()
		if n := p.Metrics().PoolSize; n != 3 {
			t.Fatalf("%d workers just before KeepAlive, want 3", n)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n := p.Metrics().PoolSize; n != 1 {
			t.Fatalf("%d workers after KeepAlive, want CoreWorkers (1)", n)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := p.Metrics().PoolSize; n != 1 {
			t.Fatalf("%d workers an hour later, want the core worker kept", n)
		}
	})
}

func TestWorkerReusedBeforeKeepAliveRestartsItsIdleTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 2, KeepAlive: time.Second})
		g := newPoolGate(t)
		a := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		b := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 2))
		g.open()
		<-a.Done()
		<-b.Done()
		synctest.Wait()
		time.Sleep(900 * time.Millisecond)
		// One of the two idle workers takes this task; its idle time restarts.
		c := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 3, nil })
		<-c.Done()
		synctest.Wait()
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if n := p.Metrics().PoolSize; n != 1 {
			t.Fatalf("%d workers when the unused one's KeepAlive passed, want 1", n)
		}
		time.Sleep(900*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		if n := p.Metrics().PoolSize; n != 1 {
			t.Fatalf("%d workers just before the reused one's KeepAlive, want 1", n)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n := p.Metrics().PoolSize; n != 0 {
			t.Fatalf("%d workers when the reused one's KeepAlive passed, want 0", n)
		}
	})
}

func TestZeroKeepAliveRetiresIdleWorkersAboveCoreAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 2, CoreWorkers: 1})
		g := newPoolGate(t)
		a := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		b := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 2))
		g.open()
		<-a.Done()
		<-b.Done()
		synctest.Wait()
		if n := p.Metrics().PoolSize; n != 1 {
			t.Fatalf("%d workers with KeepAlive 0, want CoreWorkers (1)", n)
		}
	})
}

func TestKeepAliveIsMeasuredOnTheInjectedClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 2, KeepAlive: time.Minute}, pool.WithClock(clock))
		g := newPoolGate(t)
		a := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		b := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 2))
		g.open()
		<-a.Done()
		<-b.Done()
		synctest.Wait()
		time.Sleep(time.Hour) // the bubble's time does not matter
		synctest.Wait()
		if n := p.Metrics().PoolSize; n != 2 {
			t.Fatalf("%d workers after an hour of real (bubble) time, want 2: KeepAlive must use the injected clock", n)
		}
		clock.Advance(time.Minute - time.Nanosecond)
		if n := p.Metrics().PoolSize; n != 2 {
			t.Fatalf("%d workers just before KeepAlive on the clock, want 2", n)
		}
		clock.Advance(time.Nanosecond)
		if n := p.Metrics().PoolSize; n != 0 {
			t.Fatalf("%d workers after KeepAlive on the clock, want 0", n)
		}
	})
}
