package adaptive_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// sequence is an Algorithm that returns its values in turn, then the last.
type sequence struct{ next []float64 }

func (s *sequence) Update(limit float64, _ adaptive.Sample) float64 {
	v := s.next[0]
	if len(s.next) > 1 {
		s.next = s.next[1:]
	}
	return v
}

// Bulkhead invariants: "callbacks that the Semaphore runs (grants delivered
// by FinishCall or ChangeConfig) ... may re-enter the Bulkhead", and "the
// newest limit wins: ... a ChangeConfig that re-enters (through a grant
// callback) ... never leaves an older limit in force". The first queued
// call keeps its permit; the others finish inside their grant callbacks,
// granted by the ChangeConfig that applies a raised limit and by each
// other's FinishCall, and each finish is a window (PerCall) that asks for
// another limit while the first ChangeConfig is still running.
//
// The ChangeConfig runs the callbacks of its second and later grants on
// fresh goroutines (see Acquisition.OnDone): the bubble's Wait waits for
// them.
func TestHostileGrantCallbacksThatFinishAtOnceLeaveTheNewestLimitInForce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		alg := &sequence{next: []float64{4, 6, 2, 7, 3, 5}}
		b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxQueuedCalls: bulkhead.Unbounded, MaxWaitDuration: bulkhead.NoTimeout},
			adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, MaxCutPerSecond: 1, Window: adaptive.Window{PerCall: true}})
		holder, ok := b.TryAcquire()
		require.True(t, ok)
		var granted, finished atomic.Int32
		for range 8 {
			a := b.AcquirePermissionAsync()
			require.ErrorIs(t, a.Err(), bulkhead.ErrPending)
			a.OnDone(func(err error) {
				assert.NoError(t, err)
				if granted.Add(1) == 1 {
					return // keeps its permit: the others need the raised limit
				}
				finished.Add(1)
				b.FinishCall() // re-enters: a window, a new desired limit
			})
		}
		clock.Advance(10 * ms)
		holder.Finish(nil) // window: 4; its permit goes to the first queued call
		synctest.Wait()
		assert.Equal(t, int32(8), granted.Load(), "every queued call was granted")
		assert.Equal(t, int32(7), finished.Load())
		st := b.Stats()
		assert.Equal(t, 1, st.InFlight)
		assert.Equal(t, int64(8), st.Windows)
		assert.Equal(t, 5, st.Limit, "the last estimate")
		assert.Equal(t, st.Limit, b.Semaphore().Config().MaxConcurrentCalls, "the newest limit is in force")
		b.FinishCall()
		assert.Equal(t, 5, b.Semaphore().Config().MaxConcurrentCalls)
	})
}

// AcquirePermissionAsync: "a Cancel of the proxy that returns true leaves
// no permit to its caller", and a cancelled acquisition is no rejection.
// Acquire: "blocks until a permit is granted, the call is rejected ... or
// ctx ends (ctx.Err())".
func TestHostileQueuedCallsWithdrawnHoldNoPermitAndAreNoRejection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 1, MaxQueuedCalls: bulkhead.Unbounded, MaxWaitDuration: time.Minute})
		require.NoError(t, err)
		b, err := adaptive.New(sem, adaptive.Config{})
		require.NoError(t, err)
		testkit.CheckPermits(t, sem)
		holder, ok := b.TryAcquire()
		require.True(t, ok)

		proxy := b.AcquirePermissionAsync()
		require.ErrorIs(t, proxy.Err(), bulkhead.ErrPending)
		ctx, cancel := context.WithCancel(t.Context())
		acquired := make(chan error, 1)
		go func() {
			c, err := b.Acquire(ctx)
			if err == nil {
				c.Release()
			}
			acquired <- err
		}()
		synctest.Wait() // the goroutine waits in the queue
		assert.Equal(t, 2, sem.Metrics().QueuedCalls)

		assert.True(t, proxy.Cancel(), "the proxy was still queued")
		cancel()
		synctest.Wait()
		assert.ErrorIs(t, <-acquired, context.Canceled)
		assert.ErrorIs(t, proxy.Err(), bulkhead.ErrCancelled)
		m := sem.Metrics()
		assert.Equal(t, 0, m.QueuedCalls)
		assert.Equal(t, 1, m.InFlightCalls, "the holder's only")
		st := b.Stats()
		assert.Equal(t, 1, st.InFlight)
		assert.Equal(t, int64(0), st.Rejected, "a withdrawal is no rejection")

		holder.Finish(nil)
		assert.Equal(t, 0, sem.Metrics().InFlightCalls)
		assert.Equal(t, 0, b.Stats().InFlight)
	})
}

// Algorithm: "the controller clamps, smooths and applies" what Update
// returns, and MaxCutPerSecond bounds how fast the limit falls "whatever
// the algorithm". An Update that returns a huge negative number cuts the
// limit by at most half a second, never below Min, and the semaphore's
// limit stays valid.
func TestHostileNegativeEstimateIsBoundedByTheCutAndTheFloor(t *testing.T) {
	alg := &fixed{next: -1e300}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 64},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, Min: 3})
	runTyped(t, b, clock, 10, 10, 100*ms)
	assert.Equal(t, 32, b.Stats().Limit, "half of 64 within the first second")
	assert.Equal(t, 32, b.Semaphore().Config().MaxConcurrentCalls)
	for range 100 {
		runTyped(t, b, clock, 10, 3, 100*ms)
	}
	assert.Equal(t, 3, b.Stats().Limit, "the floor")
	assert.Equal(t, 3, b.Semaphore().Config().MaxConcurrentCalls)
	assert.Equal(t, -1e300, b.Stats().Estimate, "Stats shows what the algorithm said")
}

// OnFloor: f "may call the Bulkhead's methods"; for a WatchRegistry it runs
// inside the registry's event listener. A listener that re-enters the
// adaptive Registry (Get of another partner, whose creation applies a
// limit and publishes events that come back to the same listener) neither
// deadlocks nor loses a permit.
func TestHostileOnFloorListenerThatReentersTheWatchRegistry(t *testing.T) {
	clock := testkit.NewVirtualClock(epoch)
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 4},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	require.NoError(t, err)
	testkit.CheckRegistry(t, reg)
	var ar *adaptive.Registry
	var events []adaptive.FloorEvent
	var others []*adaptive.Bulkhead
	ar, err = adaptive.WatchRegistry(reg, adaptive.Config{Algorithm: func() adaptive.Algorithm { return &fixed{next: 1} }, Initial: 2, MaxCutPerSecond: 1},
		adaptive.WithClock(clock), adaptive.OnFloor(func(e adaptive.FloorEvent) {
			events = append(events, e)
			other, err := ar.Get(e.Name + "-shadow") // re-enters: a new controller, its limit applied
			assert.NoError(t, err)
			others = append(others, other)
			_ = other.Stats()
		}))
	require.NoError(t, err)
	defer ar.Stop()
	sem, err := reg.Get("walmart")
	require.NoError(t, err)
	for range 10 {
		require.True(t, sem.TryAcquirePermission())
		clock.Advance(20 * ms)
		sem.FinishCall()
	}
	require.NotEmpty(t, events)
	assert.Equal(t, "walmart", events[0].Name)
	assert.True(t, events[0].AtFloor)
	assert.Equal(t, 1, sem.Config().MaxConcurrentCalls)
	require.NotEmpty(t, others)
	assert.Equal(t, 2, others[0].Semaphore().Config().MaxConcurrentCalls, "the shadow partner's initial limit is applied")
	assert.Equal(t, 0, sem.Metrics().InFlightCalls)
}

// Watch: "Stop unsubscribes", and OnFloor's f "may call the Bulkhead's
// methods". A listener that stops the watch from inside the event that
// brought the limit to the floor ends it there: the limit stays at the
// floor, later calls are not heard, and no permit is lost.
func TestHostileOnFloorListenerThatStopsTheWatch(t *testing.T) {
	clock := testkit.NewVirtualClock(epoch)
	sem, err := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 4}, bulkhead.WithClock(clock))
	require.NoError(t, err)
	testkit.CheckPermits(t, sem)
	var b *adaptive.Bulkhead
	stops := 0
	b, err = adaptive.Watch(sem, adaptive.Config{Algorithm: func() adaptive.Algorithm { return &fixed{next: 1} }, MaxCutPerSecond: 1},
		adaptive.WithClock(clock), adaptive.OnFloor(func(adaptive.FloorEvent) { stops++; b.Stop() }))
	require.NoError(t, err)
	defer b.Stop()
	for range 30 {
		require.True(t, sem.TryAcquirePermission())
		clock.Advance(20 * ms)
		sem.FinishCall()
	}
	assert.Equal(t, 1, stops)
	assert.Equal(t, 1, sem.Config().MaxConcurrentCalls, "the floor, applied")
	assert.Equal(t, int64(1), b.Stats().Windows, "no window after the Stop")
	assert.Equal(t, 0, sem.Metrics().InFlightCalls)
}
