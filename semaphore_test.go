package bulkhead_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestNewRejectsInvalidInput(t *testing.T) {
	_, err := bulkhead.New("", bulkhead.DefaultConfig())
	require.ErrorContains(t, err, "name must not be empty")

	_, err = bulkhead.New("walmart", bulkhead.DefaultConfig(), bulkhead.WithClock(nil))
	require.ErrorContains(t, err, "clock must not be nil")

	_, err = bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 0})
	require.ErrorIs(t, err, bulkhead.ErrInvalidConfig)
	require.EqualError(t, err, `bulkhead "walmart": invalid config: MaxConcurrentCalls must be >= 1, got 0`)
}

func TestInvalidConfigNamesFieldAndValue(t *testing.T) {
	cases := []struct {
		cfg  bulkhead.Config
		want string
	}{
		{bulkhead.Config{MaxConcurrentCalls: -3}, "MaxConcurrentCalls must be >= 1, got -3"},
		{bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: -time.Second, MaxQueuedCalls: bulkhead.Unbounded}, "MaxWaitDuration must be >= 0, got -1s"},
		{bulkhead.Config{MaxConcurrentCalls: 1, MaxQueuedCalls: -1}, "MaxQueuedCalls must be >= 0, got -1"},
		{bulkhead.Config{MaxConcurrentCalls: 1, QueueOrder: 7}, "QueueOrder must be FIFO or LIFO, got QueueOrder(7)"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			err := c.cfg.Validate()
			require.ErrorIs(t, err, bulkhead.ErrInvalidConfig)
			var ce *bulkhead.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestChangeConfigInvalidKeepsOldConfig(t *testing.T) {
	s := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded})
	err := s.ChangeConfig(bulkhead.Config{MaxConcurrentCalls: 0})
	require.EqualError(t, err, `bulkhead "walmart": invalid config: MaxConcurrentCalls must be >= 1, got 0`)
	assert.Equal(t, bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded}, s.Config())
	assert.Equal(t, 2, s.Metrics().AvailableConcurrentCalls)
}

func TestDefaultConfigMatchesResilience4j(t *testing.T) {
	assert.Equal(t, bulkhead.Config{MaxConcurrentCalls: 25, MaxWaitDuration: 0, MaxQueuedCalls: bulkhead.Unbounded, QueueOrder: bulkhead.FIFO}, bulkhead.DefaultConfig())
	require.NoError(t, bulkhead.DefaultConfig().Validate())
}

// The resilience4j SemaphoreBulkheadTest sequence with two permits.
func TestBasicOperationsPublishEventsInOrder(t *testing.T) {
	s := newSemaphore(t, "test", bulkhead.Config{MaxConcurrentCalls: 2})
	log := testkit.RecordEvents(t, s)

	require.True(t, s.TryAcquirePermission())
	require.True(t, s.TryAcquirePermission())
	require.False(t, s.TryAcquirePermission())
	s.FinishCall()
	s.FinishCall()
	require.True(t, s.TryAcquirePermission())
	s.ReleasePermission() // no event

	assert.Equal(t, []string{"permitted", "permitted", "rejected(no wait)", "finished", "finished", "permitted"}, log.Strings())
	assert.Equal(t, 2, s.Metrics().AvailableConcurrentCalls)
}

func TestEventsCarryNameAndClockTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "carrefour", bulkhead.Config{MaxConcurrentCalls: 1})
		var got bulkhead.Event
		remove := s.OnEvent(func(e bulkhead.Event) { got = e })
		defer remove()
		require.True(t, s.TryAcquirePermission())
		assert.Equal(t, "carrefour", got.Name)
		assert.Equal(t, time.Now(), got.Time)
		assert.Equal(t, bulkhead.CallPermitted, got.Type)
		s.ReleasePermission()
	})
}

func TestFastPathGrantsWithoutAllocating(t *testing.T) {
	s := newSemaphore(t, "fast", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded})
	allocs := testing.AllocsPerRun(1000, func() {
		a := s.AcquirePermissionAsync()
		if a.Err() != nil {
			t.Fatalf("fast path not granted: %v", a.Err())
		}
		s.FinishCall()
	})
	assert.Zero(t, allocs)
}

func TestImmediateRejectionDoesNotAllocate(t *testing.T) {
	s := newSemaphore(t, "nowait", bulkhead.Config{MaxConcurrentCalls: 1})
	require.True(t, s.TryAcquirePermission())
	defer s.ReleasePermission()
	var last *bulkhead.Acquisition
	allocs := testing.AllocsPerRun(1000, func() {
		last = s.AcquirePermissionAsync()
	})
	assert.Zero(t, allocs)
	var fe *bulkhead.FullError
	require.ErrorAs(t, last.Err(), &fe)
	assert.Equal(t, bulkhead.NoWait, fe.Reason)
}

func TestEventsCostNoAllocationWithoutListener(t *testing.T) {
	s := newSemaphore(t, "quiet", bulkhead.Config{MaxConcurrentCalls: 1})
	allocs := testing.AllocsPerRun(1000, func() {
		s.TryAcquirePermission()
		s.TryAcquirePermission() // rejected: would publish
		s.FinishCall()
	})
	assert.Zero(t, allocs)
}

func TestFullWithoutWaitRejectsAtOnce(t *testing.T) {
	s := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	log := testkit.RecordEvents(t, s)
	require.True(t, s.TryAcquirePermission())
	a := s.AcquirePermissionAsync()
	require.ErrorIs(t, a.Err(), bulkhead.ErrBulkheadFull)
	require.EqualError(t, a.Err(), "bulkhead \"walmart\": full, does not permit further calls (no wait)")
	select {
	case <-a.Done():
	default:
		t.Fatal("Done not closed for an immediate rejection")
	}
	assert.False(t, a.Cancel(), "a decided acquisition cannot be cancelled")
	s.FinishCall()
	assert.Equal(t, []string{"permitted", "rejected(no wait)", "finished"}, log.Strings())
}

func TestWaitersBlockNewcomersFromBarging(t *testing.T) {
	s := newSemaphore(t, "fifo", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	require.True(t, s.TryAcquirePermission())
	waiter := s.AcquirePermissionAsync()
	require.ErrorIs(t, waiter.Err(), bulkhead.ErrPending)

	s.FinishCall() // the permit goes to the waiter, not to whoever comes next
	require.NoError(t, waiter.Err())
	require.False(t, s.TryAcquirePermission())

	// With a free permit but a waiter queued, the fast path must not barge.
	require.NoError(t, s.ChangeConfig(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded}))
	w2 := s.AcquirePermissionAsync()
	require.ErrorIs(t, w2.Err(), bulkhead.ErrPending)
	require.NoError(t, s.ChangeConfig(bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded}))
	require.NoError(t, w2.Err(), "growth grants the waiter")
	s.FinishCall()
	s.FinishCall()
}

func TestTryAcquireFailsWhileCallsWait(t *testing.T) {
	s := newSemaphore(t, "try", bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	require.True(t, s.TryAcquirePermission())
	require.True(t, s.TryAcquirePermission())
	w := s.AcquirePermissionAsync()
	require.NoError(t, s.ChangeConfig(bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded}))
	require.True(t, w.Cancel())
	s.ReleasePermission()
	// One free permit and no waiter: TryAcquire succeeds again.
	require.True(t, s.TryAcquirePermission())
	s.ReleasePermission()
	s.ReleasePermission()
}

func TestQueuedCallsAreGrantedInFIFOOrder(t *testing.T) {
	s := newSemaphore(t, "fifo", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	require.True(t, s.TryAcquirePermission())
	var o outcomes
	for _, l := range []string{"a", "b", "c"} {
		o.watch(l, s.AcquirePermissionAsync())
	}
	assert.Equal(t, 3, s.Metrics().QueuedCalls)
	for range 3 {
		s.FinishCall()
	}
	assert.Equal(t, []string{"a", "b", "c"}, o.list())
	s.FinishCall()
}

func TestLIFOGrantsNewestAndEvictsOldestWhenFull(t *testing.T) {
	s := newSemaphore(t, "lifo", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 2, QueueOrder: bulkhead.LIFO})
	log := testkit.RecordEvents(t, s)
	require.True(t, s.TryAcquirePermission())
	var o outcomes
	for _, l := range []string{"a", "b", "c"} {
		o.watch(l, s.AcquirePermissionAsync())
	}
	assert.Equal(t, []string{"a:bulkhead \"lifo\": full, does not permit further calls (evicted)"}, o.list())
	assert.Equal(t, 2, s.Metrics().QueuedCalls)
	s.FinishCall()
	s.FinishCall()
	s.FinishCall()
	assert.Equal(t, []string{"a:bulkhead \"lifo\": full, does not permit further calls (evicted)", "c", "b"}, o.list())
	assert.Contains(t, log.Strings(), "rejected(evicted)")
}

func TestFIFOQueueFullRejectsNewcomer(t *testing.T) {
	s := newSemaphore(t, "bounded", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1})
	require.True(t, s.TryAcquirePermission())
	w := s.AcquirePermissionAsync()
	r := s.AcquirePermissionAsync()
	var fe *bulkhead.FullError
	require.ErrorAs(t, r.Err(), &fe)
	assert.Equal(t, bulkhead.QueueFull, fe.Reason)
	assert.Equal(t, "bounded", fe.Name)
	require.True(t, w.Cancel())
	s.ReleasePermission()
}

func TestQueuedCallExpiresAfterMaxWaitDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "slow", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded})
		log := testkit.RecordEvents(t, s)
		require.True(t, s.TryAcquirePermission())
		start := time.Now()
		a := s.AcquirePermissionAsync()
		<-a.Done()
		assert.Equal(t, 50*time.Millisecond, time.Since(start))
		// The timer goroutine publishes CallRejected after it closes Done
		// (Semaphore.OnEvent): let it finish before the log is read.
		synctest.Wait()
		var fe *bulkhead.FullError
		require.ErrorAs(t, a.Err(), &fe)
		assert.Equal(t, bulkhead.WaitTimeout, fe.Reason)
		assert.Zero(t, s.Metrics().QueuedCalls)
		s.FinishCall()
		assert.Equal(t, []string{"permitted", "rejected(wait timeout)", "finished"}, log.Strings())
	})
}

func TestExpiryFollowsEachWaitersOwnDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "deadlines", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 100 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded})
		require.True(t, s.TryAcquirePermission())
		start := time.Now()
		a := s.AcquirePermissionAsync()
		time.Sleep(30 * time.Millisecond) // fake time inside the bubble
		b := s.AcquirePermissionAsync()
		<-a.Done()
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
		require.ErrorIs(t, b.Err(), bulkhead.ErrPending)
		<-b.Done()
		assert.Equal(t, 130*time.Millisecond, time.Since(start))
		require.ErrorIs(t, b.Err(), bulkhead.ErrBulkheadFull)
		s.ReleasePermission()
	})
}

func TestCancelWithdrawsWithoutRejectedEvent(t *testing.T) {
	s := newSemaphore(t, "cancel", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	log := testkit.RecordEvents(t, s)
	require.True(t, s.TryAcquirePermission())
	a := s.AcquirePermissionAsync()
	var got error
	a.OnDone(func(err error) { got = err })
	require.True(t, a.Cancel())
	require.ErrorIs(t, got, bulkhead.ErrCancelled)
	require.ErrorIs(t, a.Err(), bulkhead.ErrCancelled)
	assert.False(t, a.Cancel(), "second Cancel")
	assert.Zero(t, s.Metrics().QueuedCalls)
	s.FinishCall()
	assert.Equal(t, 1, s.Metrics().AvailableConcurrentCalls, "a withdrawn waiter consumes no permit")
	assert.Equal(t, []string{"permitted", "cancelled", "finished"}, log.Strings())
}

func TestCancelAfterGrantReturnsFalseAndCallerOwnsPermit(t *testing.T) {
	s := newSemaphore(t, "late", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	require.True(t, s.TryAcquirePermission())
	a := s.AcquirePermissionAsync()
	s.FinishCall()
	require.NoError(t, a.Err())
	require.False(t, a.Cancel())
	assert.Equal(t, 1, s.Metrics().InFlightCalls)
	s.ReleasePermission()
}

// Grant and Cancel race through one CAS: whoever loses, exactly one permit
// is accounted for, and a cancelled waiter never keeps one.
func TestGrantRacingCancelNeverLeaksPermit(t *testing.T) {
	s := newSemaphore(t, "race", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	for range 2000 {
		require.True(t, s.TryAcquirePermission())
		a := s.AcquirePermissionAsync()
		var cancelled bool
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); s.FinishCall() }()
		go func() { defer wg.Done(); cancelled = a.Cancel() }()
		wg.Wait()
		<-a.Done()
		if cancelled {
			require.ErrorIs(t, a.Err(), bulkhead.ErrCancelled)
			require.Equal(t, 0, s.Metrics().InFlightCalls)
		} else {
			require.NoError(t, a.Err())
			require.Equal(t, 1, s.Metrics().InFlightCalls)
			s.ReleasePermission() // the loser of Cancel owns the permit
		}
	}
}

func TestExpiryRacingGrantDecidesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "expiry-race", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 10 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded})
		for range 200 {
			require.True(t, s.TryAcquirePermission())
			a := s.AcquirePermissionAsync()
			calls := 0
			a.OnDone(func(error) { calls++ })
			time.Sleep(10 * time.Millisecond) // the deadline is now
			s.FinishCall()                    // races the timer
			<-a.Done()
			synctest.Wait()
			require.Equal(t, 1, calls)
			if a.Err() == nil {
				s.FinishCall()
			}
			require.Equal(t, 0, s.Metrics().InFlightCalls)
		}
	})
}

func TestAtMostOneTimerArmedForManyWaiters(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	s := newSemaphore(t, "timers", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(clock))
	require.True(t, s.TryAcquirePermission())
	waiters := make([]*bulkhead.Acquisition, 1000)
	for i := range waiters {
		waiters[i] = s.AcquirePermissionAsync()
	}
	assert.Equal(t, 1, clock.PendingTimers(), "timers armed for 1000 waiters")
	for _, w := range waiters[:999] {
		require.True(t, w.Cancel())
	}
	assert.LessOrEqual(t, clock.PendingTimers(), 1)
	require.True(t, waiters[999].Cancel())
	assert.Zero(t, clock.PendingTimers(), "timer stopped once nobody waits")
	s.ReleasePermission()
}

func TestCallbacksRunOutsideTheLock(t *testing.T) {
	s := newSemaphore(t, "nolock", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	require.True(t, s.TryAcquirePermission())
	a := s.AcquirePermissionAsync()
	var m bulkhead.Metrics
	a.OnDone(func(error) { m = s.Metrics() }) // would deadlock under the lock
	remove := s.OnEvent(func(bulkhead.Event) { _ = s.Metrics() })
	defer remove()
	s.FinishCall()
	assert.Equal(t, 1, m.InFlightCalls)
	s.FinishCall()
}

func TestPermittedPublishedBeforeWaiterCallbacks(t *testing.T) {
	s := newSemaphore(t, "order", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	require.True(t, s.TryAcquirePermission())
	log := testkit.RecordEvents(t, s)
	a := s.AcquirePermissionAsync()
	a.OnDone(func(error) { s.FinishCall() })
	s.FinishCall()
	assert.Equal(t, []string{"finished", "permitted", "finished"}, log.Strings())
}

func TestPanickingCallbackDoesNotStrandOtherWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "panic", bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
		require.True(t, s.TryAcquirePermission())
		require.True(t, s.TryAcquirePermission())
		bad := s.AcquirePermissionAsync()
		bad.OnDone(func(error) { panic("boom") })
		good := s.AcquirePermissionAsync()
		func() {
			defer func() { assert.Equal(t, "boom", recover()) }()
			require.NoError(t, s.ChangeConfig(bulkhead.Config{MaxConcurrentCalls: 4, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded}))
		}()
		<-good.Done()
		require.NoError(t, good.Err())
		for range 4 {
			s.ReleasePermission()
		}
	})
}

func TestPanickingListenerDoesNotCorruptBulkhead(t *testing.T) {
	s := newSemaphore(t, "listener", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	remove := s.OnEvent(func(bulkhead.Event) { panic("listener bug") })
	defer remove()
	log := testkit.RecordEvents(t, s)
	require.True(t, s.TryAcquirePermission())
	a := s.AcquirePermissionAsync()
	s.FinishCall()
	require.NoError(t, a.Err())
	s.FinishCall()
	assert.Equal(t, []string{"permitted", "finished", "permitted", "finished"}, log.Strings())
	assert.Equal(t, 1, s.Metrics().AvailableConcurrentCalls)
}

func TestRemovedListenerReceivesNothing(t *testing.T) {
	s := newSemaphore(t, "remove", bulkhead.Config{MaxConcurrentCalls: 1})
	n := 0
	remove := s.OnEvent(func(bulkhead.Event) { n++ })
	s.TryAcquirePermission()
	remove()
	remove() // idempotent
	s.FinishCall()
	assert.Equal(t, 1, n)
	assert.PanicsWithValue(t, "bulkhead: OnEvent called with a nil listener", func() { s.OnEvent(nil) })
}

func TestChangeConfigGrowthGrantsWaiters(t *testing.T) {
	s := newSemaphore(t, "grow", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	require.True(t, s.TryAcquirePermission())
	a, b := s.AcquirePermissionAsync(), s.AcquirePermissionAsync()
	require.NoError(t, s.ChangeConfig(bulkhead.Config{MaxConcurrentCalls: 3, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded}))
	require.NoError(t, a.Err())
	require.NoError(t, b.Err())
	assert.Equal(t, bulkhead.Metrics{AvailableConcurrentCalls: 0, MaxAllowedConcurrentCalls: 3, InFlightCalls: 3, MaxQueuedCalls: bulkhead.Unbounded}, s.Metrics())
	for range 3 {
		s.FinishCall()
	}
}

func TestChangeConfigShrinkDrainsNaturally(t *testing.T) {
	s := newSemaphore(t, "shrink", bulkhead.Config{MaxConcurrentCalls: 3, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	for range 3 {
		require.True(t, s.TryAcquirePermission())
	}
	require.NoError(t, s.ChangeConfig(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded}))
	m := s.Metrics()
	assert.Equal(t, 0, m.AvailableConcurrentCalls)
	assert.Equal(t, 3, m.InFlightCalls)
	w := s.AcquirePermissionAsync()
	s.FinishCall()
	s.FinishCall()
	require.ErrorIs(t, w.Err(), bulkhead.ErrPending, "still two calls in flight against a limit of one")
	s.FinishCall()
	require.NoError(t, w.Err())
	s.FinishCall()
	assert.Equal(t, 1, s.Metrics().AvailableConcurrentCalls)
}

func TestChangeConfigKeepsQueuedDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "keep", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 100 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded})
		require.True(t, s.TryAcquirePermission())
		start := time.Now()
		old := s.AcquirePermissionAsync()
		require.NoError(t, s.ChangeConfig(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 10 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded}))
		newer := s.AcquirePermissionAsync() // deadline earlier than old's
		<-newer.Done()
		assert.Equal(t, 10*time.Millisecond, time.Since(start))
		require.ErrorIs(t, old.Err(), bulkhead.ErrPending)
		<-old.Done()
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
		require.ErrorIs(t, old.Err(), bulkhead.ErrBulkheadFull)
		s.ReleasePermission()
	})
}

func TestChangeConfigSmallerQueueBoundRejectsNobodyQueued(t *testing.T) {
	s := newSemaphore(t, "queue", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 5})
	require.True(t, s.TryAcquirePermission())
	var ws []*bulkhead.Acquisition
	for range 4 {
		ws = append(ws, s.AcquirePermissionAsync())
	}
	require.NoError(t, s.ChangeConfig(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 2}))
	for _, w := range ws {
		require.ErrorIs(t, w.Err(), bulkhead.ErrPending)
	}
	require.ErrorIs(t, s.AcquirePermissionAsync().Err(), bulkhead.ErrBulkheadFull, "newcomers see the new bound")
	for _, w := range ws {
		require.True(t, w.Cancel())
	}
	s.ReleasePermission()
}

func TestOverReleasePanicsNamingBulkhead(t *testing.T) {
	s := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 2})
	require.True(t, s.TryAcquirePermission())
	s.FinishCall()
	assert.PanicsWithValue(t, `bulkhead "walmart": released more permits than were acquired`, s.ReleasePermission)
	assert.PanicsWithValue(t, `bulkhead "walmart": released more permits than were acquired`, s.FinishCall)
	assert.Equal(t, 2, s.Metrics().AvailableConcurrentCalls)
}

func TestAcquirePermissionBlocksUntilGranted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "blocking", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
		require.NoError(t, s.AcquirePermission(context.Background()))
		done := make(chan error)
		go func() { done <- s.AcquirePermission(context.Background()) }()
		synctest.Wait()
		assert.Equal(t, 1, s.Metrics().QueuedCalls)
		s.FinishCall()
		require.NoError(t, <-done)
		s.FinishCall()
	})
}

func TestAcquirePermissionReturnsCtxErrAndLeavesNothingBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "ctx", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
		require.True(t, s.TryAcquirePermission())
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		err := s.AcquirePermission(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		m := s.Metrics()
		assert.Equal(t, 0, m.QueuedCalls)
		assert.Equal(t, 1, m.InFlightCalls)
		// Already done: fails even though a permit is free.
		s.FinishCall()
		require.ErrorIs(t, s.AcquirePermission(ctx), context.DeadlineExceeded)
		assert.Equal(t, 0, s.Metrics().InFlightCalls)
	})
}

func TestAcquirePermissionReturnsRejection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "reject", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 5 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded})
		require.True(t, s.TryAcquirePermission())
		err := s.AcquirePermission(context.Background())
		var fe *bulkhead.FullError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, bulkhead.WaitTimeout, fe.Reason)
		s.ReleasePermission()
	})
}

// A grant that lands just as ctx ends is given back, and ctx.Err() returned.
func TestAcquirePermissionCtxRacingGrantLeavesNoPermit(t *testing.T) {
	s := newSemaphore(t, "ctx-race", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	for range 1000 {
		require.True(t, s.TryAcquirePermission())
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- s.AcquirePermission(ctx) }()
		go cancel()
		for s.Metrics().QueuedCalls == 0 && ctx.Err() == nil {
			// Wait until queued or cancelled, yielding: at GOMAXPROCS 1 the
			// two goroutines run only then (without it each round waited
			// out a 10 ms time slice: 22 s at -test.cpu 1, 0.3 s at 2).
			runtime.Gosched()
		}
		s.FinishCall()
		if err := <-errc; err == nil {
			s.FinishCall()
		} else {
			require.ErrorIs(t, err, context.Canceled)
		}
		require.Equal(t, 0, s.Metrics().InFlightCalls)
		require.Equal(t, 0, s.Metrics().QueuedCalls)
	}
}

func TestOnDoneRunsExactlyOnceAndAtOnceWhenDone(t *testing.T) {
	s := newSemaphore(t, "ondone", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	a := s.AcquirePermissionAsync()
	ran := 0
	a.OnDone(func(err error) { ran++; assert.NoError(t, err) })
	assert.Equal(t, 1, ran, "runs at once on a granted acquisition")

	w := s.AcquirePermissionAsync()
	var order []int
	w.OnDone(func(error) { order = append(order, 1) })
	w.OnDone(func(error) { order = append(order, 2) })
	s.FinishCall()
	s.FinishCall()
	assert.Equal(t, []int{1, 2}, order)
	assert.PanicsWithValue(t, "bulkhead: OnDone called with a nil func", func() { w.OnDone(nil) })
}

func TestDoneIsClosedWhenOutcomeKnown(t *testing.T) {
	s := newSemaphore(t, "done", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	require.True(t, s.TryAcquirePermission())
	a := s.AcquirePermissionAsync()
	done := a.Done()
	select {
	case <-done:
		t.Fatal("Done closed while pending")
	default:
	}
	require.ErrorIs(t, a.Err(), bulkhead.ErrPending)
	assert.False(t, a.Granted())
	s.FinishCall()
	<-done
	assert.True(t, a.Granted())
	s.FinishCall()
}

func TestGrantedAndRejectedConstructors(t *testing.T) {
	g := bulkhead.GrantedAcquisition()
	require.NoError(t, g.Err())
	assert.False(t, g.Cancel())
	<-g.Done()

	boom := errors.New("custom full")
	r := bulkhead.RejectedAcquisition(boom)
	require.ErrorIs(t, r.Err(), boom)
	assert.False(t, r.Cancel())
	var got error
	r.OnDone(func(err error) { got = err })
	require.ErrorIs(t, got, boom)
	assert.PanicsWithValue(t, "bulkhead: RejectedAcquisition called with a nil error", func() { bulkhead.RejectedAcquisition(nil) })
}

func TestFullErrorMatchesErrBulkheadFull(t *testing.T) {
	err := error(&bulkhead.FullError{Name: "walmart", Reason: bulkhead.QueueFull})
	assert.ErrorIs(t, err, bulkhead.ErrBulkheadFull)
	assert.EqualError(t, err, "bulkhead \"walmart\": full, does not permit further calls (queue full)")
	assert.NotErrorIs(t, bulkhead.ErrCancelled, bulkhead.ErrBulkheadFull)
	for r, want := range map[bulkhead.Reason]string{bulkhead.NoWait: "no wait", bulkhead.WaitTimeout: "wait timeout", bulkhead.Evicted: "evicted", 0: "none", 9: "Reason(9)"} {
		assert.Equal(t, want, r.String())
	}
	assert.True(t, strings.HasPrefix(bulkhead.EventType(9).String(), "EventType("))
	assert.Equal(t, "LIFO", bulkhead.LIFO.String())
}

func TestWaitTimeoutOnVirtualClock(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	s := newSemaphore(t, "virtual", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(clock))
	log := testkit.RecordEvents(t, s)
	require.True(t, s.TryAcquirePermission())
	a := s.AcquirePermissionAsync()
	clock.Advance(49 * time.Millisecond)
	require.ErrorIs(t, a.Err(), bulkhead.ErrPending)
	clock.Advance(time.Millisecond) // the timer fires on this goroutine
	var fe *bulkhead.FullError
	require.ErrorAs(t, a.Err(), &fe)
	assert.Equal(t, bulkhead.WaitTimeout, fe.Reason)
	assert.Zero(t, clock.PendingTimers())
	s.ReleasePermission()
	assert.Equal(t, []string{"permitted", "rejected(wait timeout)"}, log.Strings())
	assert.Equal(t, time.Unix(0, 0).Add(50*time.Millisecond), log.Events()[1].Time)
}

func TestConfigStringNamesUnboundedLimits(t *testing.T) {
	cfg := bulkhead.Config{MaxConcurrentCalls: 3, MaxWaitDuration: bulkhead.NoTimeout, MaxQueuedCalls: bulkhead.Unbounded, QueueOrder: bulkhead.LIFO}
	assert.Equal(t, "{MaxConcurrentCalls:3 MaxWaitDuration:NoTimeout MaxQueuedCalls:Unbounded QueueOrder:LIFO}", cfg.String())
	cfg = bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: 7}
	assert.Equal(t, "{MaxConcurrentCalls:1 MaxWaitDuration:1s MaxQueuedCalls:7 QueueOrder:FIFO}", cfg.String())
}

func TestAWaitWithoutAQueueIsAnInvalidConfig(t *testing.T) {
	_, err := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second})
	require.ErrorIs(t, err, bulkhead.ErrInvalidConfig)
	require.EqualError(t, err, `bulkhead "walmart": invalid config: MaxQueuedCalls must be >= 1 when MaxWaitDuration is positive (bulkhead.Unbounded for no bound), got 0`)
}

func TestNoTimeoutWaitsUntilAPermitComesBack(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: bulkhead.NoTimeout, MaxQueuedCalls: 1}, bulkhead.WithClock(clock))
	require.NoError(t, err)
	require.True(t, s.TryAcquirePermission())
	a := s.AcquirePermissionAsync()
	clock.Advance(100 * 365 * 24 * time.Hour)
	require.ErrorIs(t, a.Err(), bulkhead.ErrPending, "a NoTimeout wait expired")
	s.FinishCall()
	require.NoError(t, a.Err())
	s.FinishCall()
}
