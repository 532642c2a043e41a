package bulkhead_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
)

// A blocking AcquirePermission that joins a waiting queue with a wait of a
// second or more reads no clock (stamp.go): the next reading stamps its
// deadline, within 1 ms. Its wait ends never early and at most 1 ms late.
// Callers join every 150 µs; the ones that joined after a reading and
// before the next are late by the time to that reading, which shows they
// did not read the clock themselves.
func TestABlockingWaitJoiningAQueueEndsNeverEarlyAndAtMostOneMillisecondLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const wait = time.Second
		s := newSemaphore(t, "coarse", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: wait, MaxQueuedCalls: bulkhead.Unbounded})
		require.True(t, s.TryAcquirePermission())
		type result struct {
			start, end time.Time
			err        error
		}
		results := make([]result, 40)
		var wg sync.WaitGroup
		for i := range results {
			start := time.Now()
			wg.Go(func() {
				err := s.AcquirePermission(context.Background())
				results[i] = result{start, time.Now(), err}
			})
			synctest.Wait() // queued
			time.Sleep(150 * time.Microsecond)
		}
		wg.Wait()
		late := 0
		for i, r := range results {
			var fe *bulkhead.FullError
			require.True(t, errors.As(r.err, &fe) && fe.Reason == bulkhead.WaitTimeout, "caller %d: %v", i, r.err)
			waited := r.end.Sub(r.start)
			assert.GreaterOrEqual(t, waited, wait, "caller %d's wait ended early", i)
			assert.LessOrEqual(t, waited, wait+time.Millisecond, "caller %d's wait ended more than 1 ms late", i)
			if waited > wait {
				late++
			}
		}
		assert.Greater(t, late, len(results)/2, "most callers joined between two clock readings and were stamped by the next")
		t.Logf("%d of %d waits ended late, by at most 1 ms", late, len(results))
		s.FinishCall()
	})
}

// Waiters queued unstamped are stamped with the wait they were queued
// with when ChangeConfig changes it, and the ones granted or withdrawn
// before their stamp leave the unstamped part of the queue consistent.
func TestUnstampedWaitersKeepTheirWaitAcrossChangeConfigAndLeaveCleanly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 2 * time.Second, MaxQueuedCalls: bulkhead.Unbounded}
		s := newSemaphore(t, "coarse-change", cfg)
		require.True(t, s.TryAcquirePermission())
		start := time.Now()
		errs := make([]error, 6)
		ends := make([]time.Duration, 6)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		for i := range errs {
			c := context.Background()
			if i == 3 {
				c = ctx // withdrawn while unstamped
			}
			wg.Go(func() {
				errs[i] = s.AcquirePermission(c)
				ends[i] = time.Since(start)
			})
			synctest.Wait()
		}
		cancel()
		synctest.Wait()
		s.FinishCall() // grants caller 0
		synctest.Wait()
		cfg.MaxWaitDuration = time.Second
		require.NoError(t, s.ChangeConfig(cfg)) // stamps the others with 2 s
		var late error
		wg.Go(func() { late = s.AcquirePermission(context.Background()) }) // joins with 1 s
		wg.Wait()
		assert.Error(t, late)
		assert.NoError(t, errs[0])
		assert.ErrorIs(t, errs[3], context.Canceled)
		for _, i := range []int{1, 2, 4, 5} {
			var fe *bulkhead.FullError
			require.True(t, errors.As(errs[i], &fe) && fe.Reason == bulkhead.WaitTimeout, "caller %d: %v", i, errs[i])
			assert.GreaterOrEqual(t, ends[i], 2*time.Second, "caller %d kept its 2 s wait", i)
			assert.LessOrEqual(t, ends[i], 2*time.Second+time.Millisecond, "caller %d", i)
		}
		s.FinishCall()
		assert.Zero(t, s.Metrics().QueuedCalls)
	})
}

// TestHammer's mix with waits of a second and more, so that blocking
// callers join the queue unstamped while others expire, are granted,
// withdrawn, evicted and reconfigured; a blocking wait that ends with
// WaitTimeout never ends before the shortest wait in use.
func TestHammerWithCoarseDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, ops = 12, 400
		waits := []time.Duration{time.Second, 1500 * time.Millisecond, 2 * time.Second}
		s := newSemaphore(t, "coarse-hammer", bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded})
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w), 26))
				for range ops {
					switch rng.IntN(5) {
					case 0, 1:
						ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(3000))*time.Millisecond)
						start := time.Now()
						err := s.AcquirePermission(ctx)
						var fe *bulkhead.FullError
						switch {
						case err == nil:
							time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
							s.FinishCall()
						case errors.As(err, &fe) && fe.Reason == bulkhead.WaitTimeout:
							assert.GreaterOrEqual(t, time.Since(start), waits[0], "a wait ended early")
						}
						cancel()
					case 2:
						a := s.AcquirePermissionAsync()
						if rng.IntN(2) == 0 && a.Cancel() {
							continue
						}
						<-a.Done()
						if a.Err() == nil {
							s.ReleasePermission()
						}
					case 3:
						cfg := bulkhead.Config{MaxConcurrentCalls: 1 + rng.IntN(3), MaxWaitDuration: waits[rng.IntN(len(waits))], MaxQueuedCalls: bulkhead.Unbounded}
						if rng.IntN(4) == 0 {
							cfg.QueueOrder = bulkhead.LIFO
							cfg.MaxQueuedCalls = 1 + rng.IntN(6)
						}
						require.NoError(t, s.ChangeConfig(cfg))
					case 4:
						time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
					}
				}
			})
		}
		wg.Wait()
		m := s.Metrics()
		assert.Equal(t, m.MaxAllowedConcurrentCalls, m.AvailableConcurrentCalls, "all permits back")
		assert.Zero(t, m.QueuedCalls)
	})
}
