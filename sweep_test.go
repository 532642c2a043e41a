package bulkhead_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// sweepCallbacks records, for the callbacks of one expiry sweep, the
// goroutines they ran on and how long after the expiry each started.
type sweepCallbacks struct {
	mu         sync.Mutex
	goroutines map[uint64]int
	delays     []time.Duration
}

func (c *sweepCallbacks) record(expiry time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.goroutines == nil {
		c.goroutines = map[uint64]int{}
	}
	c.goroutines[goroutineID()]++
	c.delays = append(c.delays, time.Since(expiry))
}

// queueExpiring holds the one permit of s and queues n waiters that all
// expire one second from now; it returns them and their expiry time.
func queueExpiring(t *testing.T, n int) (*bulkhead.Semaphore, []*bulkhead.Acquisition, time.Time) {
	s := newSemaphore(t, "sweep", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded})
	if !s.TryAcquirePermission() {
		t.Fatal("permit not free")
	}
	expiry := time.Now().Add(time.Second)
	all := make([]*bulkhead.Acquisition, n)
	for i := range all {
		all[i] = s.AcquirePermissionAsync()
	}
	return s, all, expiry
}

func TestSweepRunsQuickCallbacksWithoutAGoroutineEach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 10000
		s, all, expiry := queueExpiring(t, n)
		var c sweepCallbacks
		for _, a := range all {
			a.OnDone(func(error) { c.record(expiry) })
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if len(c.delays) != n {
			t.Fatalf("%d callbacks ran, want %d", len(c.delays), n)
		}
		if len(c.goroutines) > n/100 {
			t.Fatalf("the sweep ran its %d quick callbacks on %d goroutines, want at most %d", n, len(c.goroutines), n/100)
		}
		s.FinishCall()
	})
}

// A callback of a sweep that blocks delays the ones after it by at most two
// watchdog periods (2 ms): a fresh goroutine carries on with them. Two
// blocking callbacks delay the ones after both by up to 2 ms each.
func TestBlockingSweepCallbackDelaysTheOthersAtMostTwoMilliseconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1000
		s, all, expiry := queueExpiring(t, n)
		var c sweepCallbacks
		unblock := make(chan struct{})
		defer synctest.Wait()
		defer close(unblock)
		var mu sync.Mutex
		lastBlock := expiry // when the latest blocking callback started (or the expiry)
		for i, a := range all {
			if i == 0 || i == n/2 {
				a.OnDone(func(error) {
					mu.Lock()
					lastBlock = time.Now()
					mu.Unlock()
					<-unblock
				})
				continue
			}
			a.OnDone(func(error) {
				mu.Lock()
				since := time.Since(lastBlock)
				mu.Unlock()
				c.record(expiry)
				if since > 2*time.Millisecond {
					t.Errorf("callback %d started %v after the blocking callback before it, want at most 2ms", i, since)
				}
			})
		}
		time.Sleep(time.Second + 10*time.Millisecond)
		synctest.Wait()
		if len(c.delays) != n-2 {
			t.Fatalf("%d callbacks ran while two blocked, want %d", len(c.delays), n-2)
		}
		if last := c.delays[len(c.delays)-1]; last > 4*time.Millisecond {
			t.Fatalf("the last callback started %v after its expiry, want at most 4ms behind two blocking ones", last)
		}
		if len(c.goroutines) > 3 {
			t.Fatalf("the others ran on %d goroutines, want at most 3 (the sweep's and one per blocked callback)", len(c.goroutines))
		}
		s.FinishCall()
	})
}

// A sweep callback that panics does not keep the ones after it from
// running: they carry on on a fresh goroutine, and the panic goes on on
// the sweeping goroutine (here the caller of VirtualClock.Advance).
func TestPanickingSweepCallbackDoesNotStopTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := testkit.NewVirtualClock(time.Unix(0, 0))
		s := newSemaphore(t, "sweep-panic", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(clock))
		require.True(t, s.TryAcquirePermission())
		const n = 100
		var ran atomic.Int32
		for i := range n {
			a := s.AcquirePermissionAsync()
			if i == 10 {
				a.OnDone(func(error) { panic("sweep callback") })
			}
			a.OnDone(func(error) { ran.Add(1) })
		}
		panicked := func() (p any) {
			defer func() { p = recover() }()
			clock.Advance(time.Second)
			return nil
		}()
		synctest.Wait()
		assert.Equal(t, "sweep callback", panicked)
		assert.Equal(t, int32(n), ran.Load(), "every other callback ran once")
		assert.Equal(t, 0, s.Metrics().QueuedCalls)
		s.FinishCall()
	})
}
