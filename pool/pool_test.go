package pool_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestDefaultPoolConfigMatchesResilience4j(t *testing.T) {
	cfg := pool.DefaultConfig()
	n := runtime.NumCPU()
	want := pool.Config{MaxWorkers: n, CoreWorkers: max(n-1, 1), QueueCapacity: 100, KeepAlive: 20 * time.Millisecond, MaxQueueWait: bulkhead.NoTimeout}
	if cfg != want {
		t.Fatalf("DefaultPoolConfig() = %+v, want %+v", cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("DefaultPoolConfig().Validate() = %v", err)
	}
}

func TestNewPoolRejectsInvalidConfigNamingFieldAndValue(t *testing.T) {
	valid := pool.Config{MaxWorkers: 2, CoreWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout}
	for _, tc := range []struct {
		edit  func(*pool.Config)
		field string
		value string
	}{
		{func(c *pool.Config) { c.MaxWorkers = 0 }, "MaxWorkers", "0"},
		{func(c *pool.Config) { c.CoreWorkers = -1 }, "CoreWorkers", "-1"},
		{func(c *pool.Config) { c.CoreWorkers = 3 }, "CoreWorkers", "3"},
		{func(c *pool.Config) { c.QueueCapacity = -5 }, "QueueCapacity", "-5"},
		{func(c *pool.Config) { c.KeepAlive = -time.Second }, "KeepAlive", "-1s"},
		{func(c *pool.Config) { c.MaxQueueWait = -time.Millisecond }, "MaxQueueWait", "-1ms"},
		// A queue needs a wait and a wait needs a queue: a zero left in one
		// must not silently turn the other off.
		{func(c *pool.Config) { c.MaxQueueWait = 0 }, "MaxQueueWait", "0s"},
		{func(c *pool.Config) { c.QueueCapacity = 0 }, "QueueCapacity", "0"},
	} {
		t.Run(tc.field+"="+tc.value, func(t *testing.T) {
			cfg := valid
			tc.edit(&cfg)
			p, err := pool.New("legacy-soap", cfg)
			if p != nil || err == nil {
				t.Fatalf("NewPool(%+v) = %v, %v; want an error", cfg, p, err)
			}
			var ce *bulkhead.ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, bulkhead.ErrInvalidConfig) {
				t.Fatalf("error %v (%T) is not a *ConfigError", err, err)
			}
			if ce.Field != tc.field || fmt.Sprint(ce.Value) != tc.value || ce.Name != "legacy-soap" {
				t.Fatalf("ConfigError = %+v, want field %s value %s name legacy-soap", ce, tc.field, tc.value)
			}
			for _, part := range []string{"legacy-soap", tc.field, tc.value} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("message %q does not name %q", err, part)
				}
			}
		})
	}
}

func TestNewPoolRejectsEmptyNameAndNilClock(t *testing.T) {
	if _, err := pool.New("", pool.DefaultConfig()); err == nil {
		t.Error("NewPool with an empty name succeeded")
	}
	if _, err := pool.New("p", pool.DefaultConfig(), pool.WithClock(nil)); err == nil || !strings.Contains(err.Error(), "clock") {
		t.Errorf("NewPool with a nil clock: err = %v, want one naming the clock", err)
	}
}

func TestPoolStartsWorkerPerConcurrentTaskUpToMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 3, CoreWorkers: 1, QueueCapacity: 10, KeepAlive: time.Minute, MaxQueueWait: bulkhead.NoTimeout})
		g := newPoolGate(t)
		var running atomic.Int32
		fs := make([]*pool.Future[int], 5)
		for i := range fs {
			fs[i] = pool.Submit(context.Background(), p, func(ctx context.Context) (int, error) {
				running.Add(1)
				defer running.Add(-1)
				return poolTaskWaitingOn(g, i)(ctx)
			})
		}
		synctest.Wait()
		// Not ThreadPoolExecutor's rule (grow only when the queue is full):
		// workers start while below MaxWorkers, and only then tasks queue.
		want := pool.Metrics{ActiveWorkers: 3, PoolSize: 3, CoreWorkers: 1, MaxWorkers: 3, QueueDepth: 2, QueueCapacity: 10, RemainingQueueCapacity: 8}
		if m := p.Metrics(); m != want {
			t.Fatalf("Metrics() = %+v, want %+v", m, want)
		}
		if n := running.Load(); n != 3 {
			t.Fatalf("%d tasks running, want 3", n)
		}
		g.open()
		for i, f := range fs {
			if v, err := f.Get(context.Background()); v != i || err != nil || !f.Ran() {
				t.Fatalf("task %d: %v, %v, ran %v", i, v, err, f.Ran())
			}
		}
	})
}

func TestQueuedTasksRunInFIFOOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 10, MaxQueueWait: bulkhead.NoTimeout})
		g := newPoolGate(t)
		first := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, -1))
		var order []int // written by the single worker only
		var fs []*pool.Future[int]
		for i := range 5 {
			fs = append(fs, pool.Submit(context.Background(), p, func(context.Context) (int, error) {
				order = append(order, i)
				return i, nil
			}))
		}
		g.open()
		if _, err := first.Get(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			<-f.Done()
		}
		if !slices.Equal(order, []int{0, 1, 2, 3, 4}) {
			t.Fatalf("queued tasks ran in order %v", order)
		}
	})
}

func TestFullQueueRejectsAtOnceWithFullError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "walmart", pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout})
		events := testkit.RecordEvents(t, p)
		g := newPoolGate(t)
		running := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		queued := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 2))
		var ran atomic.Bool
		rejected := pool.Submit(context.Background(), p, func(context.Context) (int, error) { ran.Store(true); return 3, nil })
		select {
		case <-rejected.Done():
		default:
			t.Fatal("a task submitted to a full queue is not done at once")
		}
		var fe *bulkhead.FullError
		if err := rejected.Err(); !errors.As(err, &fe) || fe.Reason != bulkhead.QueueFull || fe.Name != "walmart" || !errors.Is(err, bulkhead.ErrBulkheadFull) {
			t.Fatalf("Err() = %v, want *FullError{walmart, QueueFull}", err)
		}
		if rejected.Ran() || rejected.Value() != 0 || rejected.Cancel() {
			t.Fatal("a rejected task reports it ran, has a value, or can be cancelled")
		}
		g.open()
		for _, f := range []*pool.Future[int]{running, queued} {
			if _, err := f.Get(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if ran.Load() {
			t.Fatal("the rejected task ran")
		}
		if got := events.Strings(); !slices.Contains(got, "rejected(queue full)") || events.Count(bulkhead.CallPermitted) != 2 {
			t.Fatalf("events %v, want 2 permitted and one rejected(queue full)", got)
		}
	})
}

func TestZeroQueueAndZeroWaitRunOrRejectWithNoWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
		events := testkit.RecordEvents(t, p)
		g := newPoolGate(t)
		a := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		b := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 2))
		var fe *bulkhead.FullError
		if !errors.As(b.Err(), &fe) || fe.Reason != bulkhead.NoWait {
			t.Fatalf("second task with no queue and no wait: Err() = %v, want a *FullError with NoWait", b.Err())
		}
		if got := events.Strings(); !slices.Contains(got, "rejected(no wait)") {
			t.Fatalf("events %v, want rejected(no wait)", got)
		}
		g.open()
		if _, err := a.Get(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestEventsOfARunningTaskArePermittedThenFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := newTestPool(t, "edi", pool.Config{MaxWorkers: 2, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout})
		events := testkit.RecordEvents(t, p)
		g := newPoolGate(t)
		var fs []*pool.Future[int]
		for i := range 3 {
			fs = append(fs, pool.Submit(context.Background(), p, poolTaskWaitingOn(g, i)))
		}
		synctest.Wait() // the workers have published CallPermitted
		fs = append(fs, pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 3)))
		if want := []string{"permitted", "permitted", "rejected(queue full)"}; !slices.Equal(events.Strings(), want) {
			t.Fatalf("events %v, want %v", events.Strings(), want)
		}
		g.open()
		for _, f := range fs {
			<-f.Done()
		}
		synctest.Wait()
		if p, f := events.Count(bulkhead.CallPermitted), events.Count(bulkhead.CallFinished); p != 3 || f != 3 {
			t.Fatalf("%d permitted, %d finished, want 3 of each", p, f)
		}
		for _, e := range events.Events() {
			if e.Name != "edi" || !e.Time.Equal(start) {
				t.Fatalf("event %v: want name edi and time %v", e, start)
			}
		}
	})
}

func TestPanickingListenerDoesNotBreakThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
		t.Cleanup(p.OnEvent(func(bulkhead.Event) { panic("listener") }))
		if v, err := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 1, nil }).Get(context.Background()); v != 1 || err != nil {
			t.Fatalf("Get = %v, %v", v, err)
		}
	})
}

func TestNoTimeoutKeepAliveNeverRetiresAndArmsNoTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := testkit.NewVirtualClock(time.Unix(0, 0))
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 2, KeepAlive: bulkhead.NoTimeout}, pool.WithClock(clock))
		g := newPoolGate(t)
		a := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		b := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 2))
		g.open()
		<-a.Done()
		<-b.Done()
		synctest.Wait()
		if n := clock.PendingTimers(); n != 0 {
			t.Fatalf("%d timers armed for a KeepAlive without bound, want 0", n)
		}
		clock.Advance(100 * 365 * 24 * time.Hour) // idleSince+KeepAlive must not wrap around
		if n := p.Metrics().PoolSize; n != 2 {
			t.Fatalf("%d workers a century later, want both kept", n)
		}
	})
}

func TestNoTimeoutMaxQueueWaitArmsNoTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := testkit.NewVirtualClock(time.Unix(0, 0))
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout}, pool.WithClock(clock))
		g := newPoolGate(t)
		busy := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		queued := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 2))
		if n := clock.PendingTimers(); n != 0 {
			t.Fatalf("%d timers for a queue wait without bound, want 0", n)
		}
		clock.Advance(100 * 365 * 24 * time.Hour)
		if err := queued.Err(); err != bulkhead.ErrPending {
			t.Fatalf("a task with no queue-wait bound left the queue: %v", err)
		}
		g.open()
		<-busy.Done()
		if v, err := queued.Get(context.Background()); v != 2 || err != nil {
			t.Fatalf("queued task: %v, %v", v, err)
		}
	})
}

func TestDefaultConfigSetsEveryUnboundedLimitByName(t *testing.T) {
	cfg := pool.DefaultConfig()
	if cfg.MaxQueueWait != bulkhead.NoTimeout {
		t.Fatalf("DefaultConfig().MaxQueueWait = %v, want bulkhead.NoTimeout set explicitly", cfg.MaxQueueWait)
	}
	var zero pool.Config
	if err := zero.Validate(); err == nil || !strings.Contains(err.Error(), "MaxWorkers") {
		t.Fatalf("the zero Config validated (%v); a pool needs a worker", err)
	}
}

func TestConfigStringNamesTheUnboundedLimits(t *testing.T) {
	cfg := pool.Config{MaxWorkers: bulkhead.Unbounded, CoreWorkers: 2, QueueCapacity: 100, KeepAlive: bulkhead.NoTimeout, MaxQueueWait: 50 * time.Millisecond}
	if got, want := cfg.String(), "{MaxWorkers:Unbounded CoreWorkers:2 QueueCapacity:100 KeepAlive:NoTimeout MaxQueueWait:50ms}"; got != want {
		t.Fatalf("String() = %s, want %s", got, want)
	}
	if got := fmt.Sprintf("%v", pool.Config{MaxWorkers: 1}); got != "{MaxWorkers:1 CoreWorkers:0 QueueCapacity:0 KeepAlive:0s MaxQueueWait:0s}" {
		t.Fatalf("%%v = %s", got)
	}
}
