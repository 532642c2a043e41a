package bulkhead_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// waits records the Wait of every event of s, by type and reason.
type waits struct {
	mu sync.Mutex
	ev []bulkhead.Event
}

func recordWaits(t *testing.T, s *bulkhead.Semaphore) *waits {
	w := &waits{}
	t.Cleanup(s.OnEvent(func(e bulkhead.Event) {
		w.mu.Lock()
		w.ev = append(w.ev, e)
		w.mu.Unlock()
	}))
	return w
}

func (w *waits) of(t bulkhead.EventType, r bulkhead.Reason) []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Duration
	for _, e := range w.ev {
		if e.Type == t && e.Reason == r {
			out = append(out, e.Wait)
		}
	}
	return out
}

func TestEventWaitIsTheQueuedTimeOfAGrantedAsyncCall(t *testing.T) {
	for _, wait := range []time.Duration{time.Minute, bulkhead.NoTimeout} {
		for _, order := range []bulkhead.QueueOrder{bulkhead.FIFO, bulkhead.LIFO} {
			clock := testkit.NewVirtualClock(time.Unix(0, 0))
			s := newSemaphore(t, "wait", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: wait, MaxQueuedCalls: 4, QueueOrder: order}, bulkhead.WithClock(clock))
			w := recordWaits(t, s)
			require.True(t, s.TryAcquirePermission())
			clock.Advance(time.Second) // the epoch is set by the first wait, not here
			a := s.AcquirePermissionAsync()
			clock.Advance(1500 * time.Millisecond)
			s.FinishCall()
			require.NoError(t, a.Err())
			s.FinishCall()
			assert.Equal(t, []time.Duration{0, 1500 * time.Millisecond}, w.of(bulkhead.CallPermitted, 0), "wait %v order %v", wait, order)
		}
	}
}

func TestEventWaitOfAWaitTimeoutIsTheMaxWaitDuration(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	s := newSemaphore(t, "timeout", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: 4}, bulkhead.WithClock(clock))
	w := recordWaits(t, s)
	require.True(t, s.TryAcquirePermission())
	a := s.AcquirePermissionAsync()
	clock.Advance(20 * time.Millisecond)
	b := s.AcquirePermissionAsync()
	clock.Advance(30 * time.Millisecond) // a expires
	clock.Advance(20 * time.Millisecond) // b expires
	require.Error(t, a.Err())
	require.Error(t, b.Err())
	assert.Equal(t, []time.Duration{50 * time.Millisecond, 50 * time.Millisecond}, w.of(bulkhead.CallRejected, bulkhead.WaitTimeout))
	s.FinishCall()
}

func TestEventWaitOfAnEvictedCallIsItsTimeInTheQueue(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	s := newSemaphore(t, "evict", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: 1, QueueOrder: bulkhead.LIFO}, bulkhead.WithClock(clock))
	w := recordWaits(t, s)
	require.True(t, s.TryAcquirePermission())
	a := s.AcquirePermissionAsync()
	clock.Advance(7 * time.Millisecond)
	b := s.AcquirePermissionAsync() // evicts a
	require.Error(t, a.Err())
	assert.Equal(t, []time.Duration{7 * time.Millisecond}, w.of(bulkhead.CallRejected, bulkhead.Evicted))
	assert.True(t, b.Cancel())
	s.FinishCall()
}

func TestEventWaitIsZeroForCallsDecidedAtOnce(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	s := newSemaphore(t, "once", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: 1}, bulkhead.WithClock(clock))
	w := recordWaits(t, s)
	require.True(t, s.TryAcquirePermission())
	a := s.AcquirePermissionAsync()
	clock.Advance(time.Second)
	require.Error(t, s.AcquirePermissionAsync().Err()) // QueueFull
	require.False(t, s.TryAcquirePermission())         // NoWait
	assert.True(t, a.Cancel())
	s.FinishCall()
	for _, e := range w.ev {
		assert.Zero(t, e.Wait, "%v", e)
	}
}

func TestEventWaitOfABlockingCallIsItsTimeInTheQueue(t *testing.T) {
	for _, wait := range []time.Duration{time.Minute, bulkhead.NoTimeout} {
		clock := testkit.NewVirtualClock(time.Unix(0, 0))
		s := newSemaphore(t, "blocking", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: wait, MaxQueuedCalls: 4}, bulkhead.WithClock(clock))
		w := recordWaits(t, s)
		require.True(t, s.TryAcquirePermission())
		done := make(chan error, 1)
		go func() { done <- s.AcquirePermission(context.Background()) }()
		require.Eventually(t, func() bool { return s.Metrics().QueuedCalls == 1 }, 5*time.Second, time.Millisecond)
		clock.Advance(3 * time.Millisecond)
		s.FinishCall()
		require.NoError(t, <-done)
		s.FinishCall()
		assert.Equal(t, []time.Duration{0, 3 * time.Millisecond}, w.of(bulkhead.CallPermitted, 0), "wait %v", wait)
	}
}

func TestEventWaitOfANoTimeoutCallQueuedBeforeAnyListenerIsZero(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	s := newSemaphore(t, "late", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: bulkhead.NoTimeout, MaxQueuedCalls: 4}, bulkhead.WithClock(clock))
	require.True(t, s.TryAcquirePermission())
	a := s.AcquirePermissionAsync()
	w := recordWaits(t, s)
	clock.Advance(time.Second)
	s.FinishCall()
	require.NoError(t, a.Err())
	s.FinishCall()
	assert.Equal(t, []time.Duration{0}, w.of(bulkhead.CallPermitted, 0))
}

// The documented limit: a bounded wait measured after ChangeConfig changed
// MaxWaitDuration is off by the change, and never negative.
func TestEventWaitAfterChangeConfigIsNeverNegative(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	cfg := bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: 4}
	s := newSemaphore(t, "change", cfg, bulkhead.WithClock(clock))
	w := recordWaits(t, s)
	require.True(t, s.TryAcquirePermission())
	a := s.AcquirePermissionAsync()
	cfg.MaxWaitDuration = time.Hour
	require.NoError(t, s.ChangeConfig(cfg))
	b := s.AcquirePermissionAsync()
	clock.Advance(time.Millisecond)
	s.FinishCall()
	s.FinishCall()
	s.FinishCall()
	require.NoError(t, a.Err())
	require.NoError(t, b.Err())
	for _, d := range w.of(bulkhead.CallPermitted, 0) {
		assert.GreaterOrEqual(t, d, time.Duration(0))
	}
	assert.Equal(t, time.Millisecond, w.of(bulkhead.CallPermitted, 0)[2], "b was queued under the new MaxWaitDuration")
}

// A bounded wait too long for its deadline to be told from an open one
// (146 years and more after the wait state's epoch) still reports its
// Wait, as Event.Wait promises for every queued call but a NoTimeout one
// queued before any listener: the deadline saturated at math.MaxInt64
// (read as "enqueue time unknown": 0), or landed among the open waits'
// encodings (read as a wrong enqueue time: 0 after the clamp).
func TestEventWaitOfAHugeBoundedWaitIsItsTimeInTheQueue(t *testing.T) {
	for _, wait := range []time.Duration{bulkhead.NoTimeout - 1, 1<<62 + time.Hour, 1<<62 - 1, 1 << 62} {
		for _, blocking := range []bool{false, true} {
			clock := testkit.NewVirtualClock(time.Unix(0, 0))
			s := newSemaphore(t, "huge", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: wait, MaxQueuedCalls: 4}, bulkhead.WithClock(clock))
			w := recordWaits(t, s)
			require.True(t, s.TryAcquirePermission())
			done := make(chan error, 1)
			if blocking {
				go func() { done <- s.AcquirePermission(context.Background()) }()
				require.Eventually(t, func() bool { return s.Metrics().QueuedCalls == 1 }, 5*time.Second, time.Millisecond)
			} else {
				a := s.AcquirePermissionAsync()
				a.OnDone(func(err error) { done <- err })
			}
			clock.Advance(5 * time.Second)
			s.FinishCall()
			require.NoError(t, <-done)
			s.FinishCall()
			assert.Equal(t, []time.Duration{0, 5 * time.Second}, w.of(bulkhead.CallPermitted, 0), "wait %v blocking %v", wait, blocking)
		}
	}
}

// A call queued with a bounded wait reports its true Wait after
// ChangeConfig made the wait NoTimeout and a call queued with it: the
// open wait changes no bounded call's enqueue time (it was read as the
// wait state's epoch: 15s here).
func TestEventWaitOfABoundedCallAfterAChangeToNoTimeoutIsItsTimeInTheQueue(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	cfg := bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: 4}
	s := newSemaphore(t, "open", cfg, bulkhead.WithClock(clock))
	w := recordWaits(t, s)
	require.True(t, s.TryAcquirePermission())
	first := s.AcquirePermissionAsync() // sets the wait state's epoch
	require.True(t, first.Cancel())
	clock.Advance(10 * time.Second)
	a := s.AcquirePermissionAsync()
	cfg.MaxWaitDuration = bulkhead.NoTimeout
	require.NoError(t, s.ChangeConfig(cfg))
	clock.Advance(2 * time.Second)
	b := s.AcquirePermissionAsync()
	clock.Advance(3 * time.Second)
	s.FinishCall()
	require.NoError(t, a.Err())
	s.FinishCall()
	require.NoError(t, b.Err())
	s.FinishCall()
	assert.Equal(t, []time.Duration{0, 5 * time.Second, 3 * time.Second}, w.of(bulkhead.CallPermitted, 0))
}
