package pool_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// finished records the CallDuration of the CallFinished events of src.
type finished struct {
	mu sync.Mutex
	d  []time.Duration
}

func recordFinished(t *testing.T, src interface {
	OnEvent(func(bulkhead.Event)) func()
}) *finished {
	f := &finished{}
	t.Cleanup(src.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallFinished {
			f.mu.Lock()
			f.d = append(f.d, e.CallDuration)
			f.mu.Unlock()
		}
	}))
	return f
}

func (f *finished) all() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.d)
}

func sleeping(d time.Duration) func(context.Context) (int, error) {
	return func(context.Context) (int, error) { time.Sleep(d); return 0, nil }
}

func TestPoolCallDurationIsTheTimeATaskRanNotItsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "ran", pool.Config{MaxWorkers: 1, CoreWorkers: 1, QueueCapacity: 4, KeepAlive: time.Second, MaxQueueWait: bulkhead.NoTimeout})
		f := recordFinished(t, p)
		f1 := pool.Submit(context.Background(), p, sleeping(250*time.Millisecond))
		f2 := pool.Submit(context.Background(), p, sleeping(40*time.Millisecond)) // queued for 250 ms
		for _, fu := range []*pool.Future[int]{f1, f2} {
			if _, err := fu.Get(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if got := f.all(); !slices.Equal(got, []time.Duration{250 * time.Millisecond, 40 * time.Millisecond}) {
			t.Fatalf("CallDurations %v, want [250ms 40ms]", got)
		}
	})
}

func TestPoolTaskStartedWhileNoListenerReportsNoDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "late", pool.Config{MaxWorkers: 1, CoreWorkers: 1, QueueCapacity: 1, KeepAlive: time.Second, MaxQueueWait: bulkhead.NoTimeout})
		g := newPoolGate(t)
		fu := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		synctest.Wait() // running, no listener
		f := recordFinished(t, p)
		time.Sleep(time.Second)
		g.open()
		if _, err := fu.Get(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := f.all(); !slices.Equal(got, []time.Duration{0}) {
			t.Fatalf("CallDurations %v, want [0]", got)
		}
	})
}

func TestPoolListenerThatExitsAtTheGrantLeavesTheTaskWithoutAStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "exit", pool.Config{MaxWorkers: 1, CoreWorkers: 1, QueueCapacity: 1, KeepAlive: time.Second, MaxQueueWait: bulkhead.NoTimeout})
		f := recordFinished(t, p)
		// A first task with a known start, so that a stale one would show.
		if _, err := pool.Submit(context.Background(), p, sleeping(time.Second)).Get(context.Background()); err != nil {
			t.Fatal(err)
		}
		remove := p.OnEvent(func(e bulkhead.Event) {
			if e.Type == bulkhead.CallPermitted {
				runtime.Goexit()
			}
		})
		fu := pool.Submit(context.Background(), p, sleeping(time.Millisecond))
		if _, err := fu.Get(context.Background()); err != nil {
			t.Fatal(err)
		}
		remove()
		synctest.Wait()
		got := f.all()
		if len(got) != 2 || got[0] != time.Second || got[1] > time.Millisecond {
			t.Fatalf("CallDurations %v, want [1s, at most 1ms]", got)
		}
	})
}

func TestPoolMetricsSourceFollowsEveryPoolOfTheRegistry(t *testing.T) {
	// In a bubble, so that synctest.Wait can tell when the workers are idle.
	synctest.Test(t, func(t *testing.T) {
		clock := testkit.NewVirtualClock(time.Unix(0, 0))
		r, err := pool.NewRegistry(pool.Config{MaxWorkers: 2, QueueCapacity: 3, KeepAlive: time.Second, MaxQueueWait: bulkhead.NoTimeout},
			pool.WithClock(clock), pool.WithIdleTimeout(time.Minute), pool.WithMaxPools(10, pool.Config{MaxWorkers: 1}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close(context.Background()) })
		src := r.MetricsSource()
		early, err := r.Get("early")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		events := map[string]int{}
		remove := src.OnEvent(func(e bulkhead.Event) {
			mu.Lock()
			events[e.Name]++
			mu.Unlock()
		})
		var evicted []string
		t.Cleanup(src.OnEvict(func(name string) { evicted = append(evicted, name) }))
		late, err := r.Get("late") // created after OnEvent: subscribed before Get returns
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []*pool.Pool{early, late} {
			if _, err := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 0, nil }).Get(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := pool.SubmitKeyed(context.Background(), r, "keyed", pool.CallOptions{}, func(context.Context) (int, error) { return 0, nil }).Get(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock() // each Future is done after its CallFinished was published
		if events["early"] != 2 || events["late"] != 2 || events["keyed"] != 2 {
			t.Fatalf("events by pool %v, want 2 each", events)
		}
		mu.Unlock()

		var names []string
		for name, m := range src.AllMetrics() {
			names = append(names, name)
			if m.MaxAllowedConcurrentCalls != 2 && name != bulkhead.CatchAllName || m.MaxQueuedCalls != 3 && name != bulkhead.CatchAllName {
				t.Errorf("%s: %+v", name, m)
			}
		}
		if !slices.Equal(names, []string{bulkhead.CatchAllName, "early", "keyed", "late"}) {
			t.Fatalf("AllMetrics names %v", names)
		}
		if st := src.Stats(); st.Bulkheads != 4 || st.Evictions != 0 {
			t.Fatalf("Stats %+v", st)
		}

		synctest.Wait()                // every worker is idle again (Get returns before its bookkeeping)
		clock.Advance(2 * time.Minute) // "keyed" is idle: evicted
		if !slices.Equal(evicted, []string{"keyed"}) || src.Stats().Evictions != 1 {
			t.Fatalf("evicted %v, stats %+v", evicted, src.Stats())
		}
		r.Remove("late")
		// Remove does not close: whoever removes a pool closes it. Its worker
		// may have gone idle after the Advance above (Get returns before the
		// worker's bookkeeping), with a keep-alive timer the clock never reaches.
		if err := late.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		remove()
		remove() // idempotent
		if _, err := pool.Submit(context.Background(), early, func(context.Context) (int, error) { return 0, nil }).Get(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if events["early"] != 2 {
			t.Fatalf("an event after remove: %v", events)
		}
	})
}

// Listeners registered on a pool registry's MetricsSource while pools are
// created concurrently are subscribed to every pool exactly once: each
// event of each pool reaches each listener once (internal/fanout under the
// catalog's lock).
func TestStressMetricsSourceListenersRaceWithPoolCreation(t *testing.T) {
	r, err := pool.NewRegistry(pool.Config{MaxWorkers: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	src := r.MetricsSource()
	const listeners, pools = 8, 40
	var counts [listeners]sync.Map // pool name -> *atomic.Int64 of CallPermitted seen
	var removes [listeners]func()
	var wg sync.WaitGroup
	for i := range listeners {
		wg.Go(func() {
			removes[i] = src.OnEvent(func(e bulkhead.Event) {
				if e.Type == bulkhead.CallPermitted {
					v, _ := counts[i].LoadOrStore(e.Name, new(atomic.Int64))
					v.(*atomic.Int64).Add(1)
				}
			})
		})
	}
	for p := range pools {
		wg.Go(func() {
			if _, err := r.Get(fmt.Sprintf("p%d", p)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for p := range pools {
		pl, _ := r.Find(fmt.Sprintf("p%d", p))
		if _, err := pool.Submit(context.Background(), pl, func(context.Context) (int, error) { return 0, nil }).Get(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range listeners {
		for p := range pools {
			v, ok := counts[i].Load(fmt.Sprintf("p%d", p))
			if !ok || v.(*atomic.Int64).Load() != 1 {
				n := int64(0)
				if ok {
					n = v.(*atomic.Int64).Load()
				}
				t.Errorf("listener %d saw pool p%d's grant %d times, want once", i, p, n)
			}
		}
		removes[i]()
	}
}
