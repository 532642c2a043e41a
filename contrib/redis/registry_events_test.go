package redis_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// WithIdleTimeout's promise: an idle bulkhead is evicted between idle and
// 1.5 idle after its last keyed call ended, whatever the phase of that end
// against the sweeps, on the Store's Clock.
func TestAnIdleFleetBulkheadIsEvictedBetweenIdleAndOneAndAHalfIdle(t *testing.T) {
	const idle = time.Second
	const step = 10 * time.Millisecond
	clock := testkit.NewVirtualClock(time.Now())
	cfg := fastStore()
	cfg.Clock = clock
	s, _ := newStore(t, sharedServer(t), cfg)
	reg, err := rxredis.NewRegistry(s, fleetConfig(1, 0), rxredis.WithIdleTimeout(idle))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	evictedAt := map[string]time.Time{}
	defer reg.OnEvict(func(name string) { mu.Lock(); evictedAt[name] = clock.Now(); mu.Unlock() })()
	for i, phase := range []time.Duration{0, idle / 8, idle / 4, idle/2 - step} {
		key := fmt.Sprintf("k%d", i)
		p := reg.Acquire(key, bulkhead.CallOptions{}) // creates the bulkhead, arms a sweep idle/2 later
		if err := await(t, p.Acquisition()); err != nil {
			t.Fatal(err)
		}
		clock.Advance(phase)
		p.Finish()
		ended := clock.Now()
		for range int(2 * idle / step) {
			clock.Advance(step)
		}
		mu.Lock()
		at, ok := evictedAt[key]
		mu.Unlock()
		if !ok {
			t.Fatalf("%s (ended %v into a sweep period): not evicted within 2 idle", key, phase)
		}
		if d := at.Sub(ended); d < idle || d > idle*3/2 {
			t.Errorf("%s (ended %v into a sweep period): evicted %v after its last call ended, want between %v and %v", key, phase, d, idle, idle*3/2)
		}
	}
}

// Registry listeners come and go while keyed calls create and evict
// bulkheads: a listener registered throughout sees every call's events
// exactly once (a bulkhead created while a listener registers is
// subscribed once, not twice nor never), and a listener removed hears
// nothing after the load.
func TestStressRegistryListenersComeAndGoWhileBulkheadsAreCreatedAndEvicted(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Now())
	cfg := fastStore()
	cfg.Clock = clock
	s, _ := newStore(t, sharedServer(t), cfg)
	reg, err := rxredis.NewRegistry(s, fleetConfig(2, 0), rxredis.WithIdleTimeout(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var permitted, rejected, finished atomic.Int64
	removeSteady := reg.OnEvent(func(e bulkhead.Event) {
		switch e.Type {
		case bulkhead.CallPermitted:
			permitted.Add(1)
		case bulkhead.CallRejected:
			rejected.Add(1)
		case bulkhead.CallFinished:
			finished.Add(1)
		}
	})
	var churned atomic.Int64 // events heard by the listeners that come and go
	var granted, refused atomic.Int64
	deadline := time.Now().Add(soak(1500 * time.Millisecond))
	var wg sync.WaitGroup
	wg.Go(func() { // evictions
		for time.Now().Before(deadline) {
			clock.Advance(10 * time.Millisecond)
			time.Sleep(time.Millisecond)
		}
	})
	for g := range 4 {
		wg.Go(func() { // listeners
			rng := rand.New(rand.NewPCG(7, uint64(g)))
			for time.Now().Before(deadline) {
				remove := reg.OnEvent(func(bulkhead.Event) { churned.Add(1) })
				time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
				remove()
				if rng.IntN(2) == 0 {
					remove() // idempotent
				}
			}
		})
	}
	for g := range 6 {
		wg.Go(func() { // keyed calls on a few keys, which come and go
			rng := rand.New(rand.NewPCG(9, uint64(g)))
			for time.Now().Before(deadline) {
				p := reg.Acquire(fmt.Sprintf("k%d", rng.IntN(5)), bulkhead.CallOptions{})
				if err := await(t, p.Acquisition()); err != nil {
					refused.Add(1)
					continue
				}
				granted.Add(1)
				time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
				p.Finish()
			}
		})
	}
	wg.Wait()
	if n := reg.Stats().Evictions; n == 0 {
		t.Error("no eviction: the test raced nothing")
	}
	if permitted.Load() != granted.Load() || finished.Load() != granted.Load() || rejected.Load() != refused.Load() {
		t.Errorf("the steady listener saw %d permitted, %d finished, %d rejected; the calls: %d granted, %d rejected",
			permitted.Load(), finished.Load(), rejected.Load(), granted.Load(), refused.Load())
	}
	removeSteady()
	before := churned.Load()
	p := reg.Acquire("after", bulkhead.CallOptions{})
	if err := await(t, p.Acquisition()); err != nil {
		t.Fatal(err)
	}
	p.Finish()
	if churned.Load() != before || permitted.Load() != granted.Load() {
		t.Error("a removed listener heard a call after the load")
	}
	t.Logf("%d granted, %d rejected, %d evictions", granted.Load(), refused.Load(), reg.Stats().Evictions)
}
