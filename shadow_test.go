package bulkhead_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// shadowLog records the events of s as "type reason" strings.
func shadowLog(t *testing.T, s *bulkhead.Semaphore) func() []string {
	var mu sync.Mutex
	var log []string
	t.Cleanup(s.OnEvent(func(e bulkhead.Event) {
		mu.Lock()
		log = append(log, e.Type.String()+" "+e.Reason.String())
		mu.Unlock()
	}))
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := log
		log = nil
		return out
	}
}

func TestShadowModeGrantsEveryCallAndEventsWhatWouldHaveHappened(t *testing.T) {
	for _, order := range []bulkhead.QueueOrder{bulkhead.FIFO, bulkhead.LIFO} {
		s := newSemaphore(t, "shadow", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: 2, QueueOrder: order, ShadowMode: true})
		log := shadowLog(t, s)
		require.True(t, s.TryAcquirePermission())
		require.True(t, s.TryAcquirePermission(), "TryAcquirePermission would have been rejected NoWait")
		require.NoError(t, s.AcquirePermissionAsync().Err()) // 1 would-be waiter before it: it would wait
		require.NoError(t, s.AcquirePermission(context.Background()))
		full := "queue full"
		if order == bulkhead.LIFO {
			full = "evicted"
		}
		assert.Equal(t, []string{
			"permitted none",
			"shadowed no wait", "permitted none",
			"shadowed none", "permitted none",
			"shadowed " + full, "permitted none",
		}, log(), "order %v", order)
		m := s.Metrics()
		assert.Equal(t, 0, m.QueuedCalls, "nothing is queued in shadow mode")
		assert.Equal(t, 4, m.InFlightCalls)
		assert.Equal(t, 0, m.AvailableConcurrentCalls)
		for range 4 {
			s.FinishCall()
		}
		assert.Equal(t, 1, s.Metrics().AvailableConcurrentCalls)
	}
}

func TestShadowModeWithoutWaitCallsEveryOverflowNoWait(t *testing.T) {
	s := newSemaphore(t, "nowait", bulkhead.Config{MaxConcurrentCalls: 1, ShadowMode: true})
	log := shadowLog(t, s)
	for range 3 {
		require.NoError(t, s.AcquirePermissionAsync().Err())
	}
	assert.Equal(t, []string{"permitted none", "shadowed no wait", "permitted none", "shadowed no wait", "permitted none"}, log())
	for range 3 {
		s.FinishCall()
	}
}

func TestChangeConfigToShadowModeGrantsEveryWaiter(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	cfg := bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded}
	s := newSemaphore(t, "switch", cfg, bulkhead.WithClock(clock))
	w := recordWaits(t, s)
	require.True(t, s.TryAcquirePermission())
	a, b := s.AcquirePermissionAsync(), s.AcquirePermissionAsync()
	clock.Advance(time.Second)
	cfg.ShadowMode = true
	require.NoError(t, s.ChangeConfig(cfg))
	require.NoError(t, a.Err())
	require.NoError(t, b.Err())
	assert.Equal(t, []time.Duration{0, time.Second, time.Second}, w.of(bulkhead.CallPermitted, 0))
	assert.Equal(t, 3, s.Metrics().InFlightCalls)
	assert.Zero(t, clock.PendingTimers(), "the wait timer is stopped once nobody waits")

	// Off again: the three calls in flight hold the one permit and two
	// more; a new call waits until all three have finished.
	cfg.ShadowMode = false
	require.NoError(t, s.ChangeConfig(cfg))
	c := s.AcquirePermissionAsync()
	s.FinishCall()
	s.FinishCall()
	select {
	case <-c.Done():
		t.Fatal("granted while the calls in flight still exceed the limit")
	default:
	}
	s.FinishCall()
	require.NoError(t, c.Err())
	s.FinishCall()
}

// Toggling shadow mode while calls acquire, wait, cancel and finish
// strands no waiter and leaks no permit: the bulkhead ends idle with every
// permit back (CheckPermits at cleanup).
func TestShadowModeTogglingUnderLoadStrandsNoWaiterAndLeaksNoPermit(t *testing.T) {
	cfg := bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: bulkhead.NoTimeout, MaxQueuedCalls: bulkhead.Unbounded}
	s := newSemaphore(t, "toggle", cfg)
	var permitted, finished, shadowed atomic.Int64
	s.OnEvent(func(e bulkhead.Event) {
		switch e.Type {
		case bulkhead.CallPermitted:
			permitted.Add(1)
		case bulkhead.CallFinished:
			finished.Add(1)
		case bulkhead.CallShadowed:
			shadowed.Add(1)
		}
	})
	stop := make(chan struct{})
	var toggler sync.WaitGroup
	toggler.Add(1)
	go func() {
		defer toggler.Done()
		c := cfg
		for {
			select {
			case <-stop:
				return
			default:
			}
			c.ShadowMode = !c.ShadowMode
			if err := s.ChangeConfig(c); err != nil {
				t.Error(err)
				return
			}
			// Yield: this loop never blocks, and at GOMAXPROCS 1 each
			// runtime.Gosched of the workers otherwise waited for it to be
			// preempted (a 10 ms time slice).
			runtime.Gosched()
		}
	}()
	var workers sync.WaitGroup
	for g := range 8 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 2000 {
				switch rng.IntN(3) {
				case 0:
					if s.TryAcquirePermission() {
						runtime.Gosched() // hold it a little: contention
						s.FinishCall()
					}
				case 1:
					a := s.AcquirePermissionAsync()
					a.OnDone(func(err error) {
						if err == nil {
							s.FinishCall()
						}
					})
					if rng.IntN(4) == 0 && a.Cancel() {
						continue
					}
				default:
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(50))*time.Microsecond)
					if s.AcquirePermission(ctx) == nil {
						s.FinishCall()
					}
					cancel()
				}
			}
		}()
	}
	workers.Wait()
	close(stop)
	toggler.Wait()
	// Every permit came back (CheckPermits at cleanup) and no call waits.
	require.NoError(t, s.ChangeConfig(cfg))
	require.Eventually(t, func() bool {
		m := s.Metrics()
		return m.InFlightCalls == 0 && m.QueuedCalls == 0
	}, 10*time.Second, time.Millisecond)
	// A blocking call whose context ends as it is granted gives the permit
	// back without CallFinished, so permitted may exceed finished. The
	// CallPermitted of a queued async call is published by the goroutine
	// that granted it, after Done is closed (Semaphore.OnEvent): a callback
	// registered after the grant runs at once and its FinishCall can
	// publish CallFinished first, and the granting goroutine may be a
	// fresh delivery goroutine that nothing above waits for. So the last
	// CallPermitted can still be on its way when every permit is back:
	// wait for it (no new call starts, so permitted only grows).
	if !assert.Eventually(t, func() bool { return permitted.Load() >= finished.Load() }, 10*time.Second, time.Millisecond) {
		t.Errorf("%d permitted, %d finished: a CallFinished without its CallPermitted", permitted.Load(), finished.Load())
	}
	t.Logf("%d permitted, %d finished, %d shadowed", permitted.Load(), finished.Load(), shadowed.Load())
}

// Shadow mode lets through every call the limit would have rejected or
// made wait, but not one that is bad input: a weighted call heavier than
// MaxConcurrentCalls could never be granted by the limit being tried, so it
// is rejected with a *TooHeavyError in shadow mode too (its CallRejected
// has no Reason), shadows nothing and holds nothing.
func TestShadowModeRejectsACallHeavierThanTheLimit(t *testing.T) {
	s := newSemaphore(t, "shadow", bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Minute, MaxQueuedCalls: 2, ShadowMode: true})
	log := shadowLog(t, s)
	heavy := s.Call(3)
	var tooHeavy *bulkhead.TooHeavyError
	require.ErrorAs(t, heavy.AcquirePermission(context.Background()), &tooHeavy)
	require.ErrorAs(t, heavy.AcquirePermissionAsync().Err(), &tooHeavy)
	assert.False(t, heavy.TryAcquirePermission())
	assert.Equal(t, []string{"rejected none", "rejected none", "rejected none"}, log())
	assert.Equal(t, 0, s.Metrics().InFlightCalls)

	// A call of the limit's weight is not too heavy: shadow mode lets it
	// through even while another holds the permits.
	require.True(t, s.Call(2).TryAcquirePermission())
	require.True(t, s.Call(2).TryAcquirePermission())
	assert.Equal(t, []string{"permitted none", "shadowed no wait", "permitted none"}, log())
	s.Call(2).FinishCall()
	s.Call(2).FinishCall()
}
