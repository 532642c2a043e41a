package adaptive_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// panicking is an Algorithm whose Update panics while armed.
type panicking struct{ armed bool }

func (p *panicking) Update(limit float64, _ adaptive.Sample) float64 {
	if p.armed {
		panic("update exploded")
	}
	return limit
}

// windowOf9 makes nine typed calls of 20 ms: the tenth closes the window.
func windowOf9(t *testing.T, b *adaptive.Bulkhead, clock *testkit.VirtualClock) {
	t.Helper()
	runTyped(t, b, clock, 9, 1, 20*ms)
}

// Algorithm: "The controller calls Update under its lock". A panic in it
// goes on to the goroutine whose finish closed the window, but that call's
// permit still goes back and the lock is not left held.
func TestHostileAlgorithmThatPanicsLosesNoPermitAndNoLock(t *testing.T) {
	for _, path := range []string{"Call.Finish", "FinishCall", "FinishCallStarted"} {
		t.Run(path, func(t *testing.T) {
			alg := &panicking{}
			b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 2},
				adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }})
			windowOf9(t, b, clock)
			alg.armed = true
			clock.Advance(20 * ms)
			assert.PanicsWithValue(t, "update exploded", func() {
				switch path {
				case "Call.Finish":
					c, ok := b.TryAcquire()
					require.True(t, ok)
					clock.Advance(20 * ms)
					c.Finish(nil)
				case "FinishCall":
					require.NoError(t, b.AcquirePermissionAsync().Err())
					clock.Advance(20 * ms)
					b.FinishCall()
				case "FinishCallStarted":
					require.NoError(t, b.AcquirePermissionAsync().Err())
					start := b.StartCall()
					clock.Advance(20 * ms)
					b.FinishCallStarted(start)
				}
			})
			assert.Equal(t, 0, b.Metrics().InFlightCalls, "the permit went back")
			alg.armed = false
			st := b.Stats() // blocks for ever if the lock was left held
			assert.Equal(t, 0, st.InFlight)
			runTyped(t, b, clock, 20, 2, 200*ms) // the controller goes on
			assert.Greater(t, b.Stats().Windows, st.Windows)
		})
	}
}

// Watch: the same for a watching controller, which calls Update from the
// semaphore's event listener.
func TestHostileWatchedAlgorithmThatPanicsLeavesNoLockHeld(t *testing.T) {
	alg := &panicking{}
	clock := testkit.NewVirtualClock(epoch)
	sem, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 2}, bulkhead.WithClock(clock))
	require.NoError(t, err)
	b, err := adaptive.Watch(sem, adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }}, adaptive.WithClock(clock))
	require.NoError(t, err)
	defer b.Stop()
	testkit.CheckPermits(t, sem)
	call := func() {
		require.True(t, sem.TryAcquirePermission())
		clock.Advance(20 * ms)
		sem.FinishCall()
	}
	for range 9 {
		call()
	}
	alg.armed = true
	func() {
		defer func() { _ = recover() }() // whatever the semaphore does with a listener's panic
		call()
	}()
	alg.armed = false
	assert.Equal(t, 0, sem.Metrics().InFlightCalls)
	_ = b.Stats() // blocks for ever if the lock was left held
	for range 20 {
		call()
	}
}

// Config.IsOverload is user code: if it panics, the panic goes on to the
// caller of Call.Finish, but the call's permit goes back and the
// controller no longer counts it in flight.
func TestHostileIsOverloadThatPanicsLosesNoPermit(t *testing.T) {
	for _, watched := range []bool{false, true} {
		name := "New"
		if watched {
			name = "Watch"
		}
		t.Run(name, func(t *testing.T) {
			clock := testkit.NewVirtualClock(epoch)
			sem, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 2}, bulkhead.WithClock(clock))
			require.NoError(t, err)
			cfg := adaptive.Config{IsOverload: func(error) bool { panic("classifier exploded") }}
			var b *adaptive.Bulkhead
			if watched {
				b, err = adaptive.Watch(sem, cfg, adaptive.WithClock(clock))
				defer b.Stop()
			} else {
				b, err = adaptive.New(sem, cfg, adaptive.WithClock(clock))
			}
			require.NoError(t, err)
			testkit.CheckPermits(t, sem)
			c, err := b.Acquire(context.Background())
			require.NoError(t, err)
			clock.Advance(20 * ms)
			assert.PanicsWithValue(t, "classifier exploded", func() { c.Finish(errors.New("boom")) })
			assert.Equal(t, 0, sem.Metrics().InFlightCalls, "the permit went back")
			assert.Equal(t, 0, b.Stats().InFlight, "the controller saw the call finish")
			c, ok := b.TryAcquire()
			require.True(t, ok)
			c.Finish(nil) // a nil error asks IsOverload nothing
		})
	}
}

// OnFloor: "a panic in f goes on to that goroutine (the controller's state
// is already consistent)". The finishing call's permit still goes back, and
// the limit that reached the floor is still applied to the semaphore.
func TestHostileOnFloorThatPanicsLosesNoPermitAndAppliesTheLimit(t *testing.T) {
	alg := &fixed{next: 1}
	clock := testkit.NewVirtualClock(epoch)
	sem, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 4}, bulkhead.WithClock(clock))
	require.NoError(t, err)
	b, err := adaptive.New(sem, adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, Min: 2, MaxCutPerSecond: 1},
		adaptive.WithClock(clock), adaptive.OnFloor(func(adaptive.FloorEvent) { panic("listener exploded") }))
	require.NoError(t, err)
	testkit.CheckPermits(t, b)
	windowOf9(t, b, clock)
	c, ok := b.TryAcquire()
	require.True(t, ok)
	clock.Advance(20 * ms)
	assert.PanicsWithValue(t, "listener exploded", func() { c.Finish(nil) })
	assert.Equal(t, 0, sem.Metrics().InFlightCalls, "the permit went back")
	st := b.Stats()
	assert.Equal(t, 0, st.InFlight)
	assert.True(t, st.AtFloor)
	assert.Equal(t, 2, st.Limit)
	assert.Equal(t, 2, sem.Config().MaxConcurrentCalls, "the limit at the floor is applied")
}
