package adaptive_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
)

func TestNewStartsFromTheSemaphoresLimitOrInitialClamped(t *testing.T) {
	b, _ := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 7}, adaptive.Config{})
	assert.Equal(t, 7, b.Stats().Limit)
	b, _ = newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 7}, adaptive.Config{Initial: 50, Max: 30})
	assert.Equal(t, 30, b.Stats().Limit)
	assert.Equal(t, 30, b.Semaphore().Config().MaxConcurrentCalls)
}

func TestWindowClosesAfterMinDurationAndMinSamplesAndAppliesTheLimit(t *testing.T) {
	alg := &fixed{next: 12}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 10},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }})
	runTyped(t, b, clock, 9, 1, 20*ms) // 9 calls, 180 ms: too few samples
	assert.Empty(t, alg.samples)
	runTyped(t, b, clock, 1, 1, 20*ms) // the tenth, after 200 ms
	require.Len(t, alg.samples, 1)
	assert.Equal(t, adaptive.Sample{RTT: 20 * ms, N: 10, InFlight: 1, Elapsed: 200 * ms}, alg.samples[0])
	assert.Equal(t, 12, b.Semaphore().Config().MaxConcurrentCalls)
	st := b.Stats()
	assert.Equal(t, 12, st.Limit)
	assert.Equal(t, 12.0, st.Estimate)
	assert.Equal(t, 20*ms, st.RTT)
	assert.Equal(t, int64(1), st.Windows)
}

func TestWindowLastsTwiceTheShortestRTT(t *testing.T) {
	alg := &fixed{next: 10}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 10},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }})
	runTyped(t, b, clock, 10, 10, 300*ms) // one window: 300 ms ≥ 100 ms
	require.Len(t, alg.samples, 1)
	runTyped(t, b, clock, 10, 10, 300*ms) // 300 ms < 2 × 300 ms: not yet
	assert.Len(t, alg.samples, 1)
	runTyped(t, b, clock, 10, 10, 300*ms)
	assert.Len(t, alg.samples, 2)
}

func TestWindowClosesAtMaxDurationWithFewSamples(t *testing.T) {
	alg := &fixed{next: 3}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 2},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }})
	runTyped(t, b, clock, 2, 2, 1100*ms) // two samples only, but past 1 s
	require.Len(t, alg.samples, 1)
	assert.Equal(t, 2, alg.samples[0].InFlight)
	assert.Equal(t, 3, b.Stats().Limit)
}

func TestFloorCeilingAndSmoothingBoundTheAlgorithm(t *testing.T) {
	alg := &fixed{next: 1000}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 10},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, Min: 5, Max: 40, Smoothing: 0.5})
	window := func() { runTyped(t, b, clock, 10, 5, 50*ms) } // 100 ms: one window each
	window()
	require.Len(t, alg.samples, 1)
	assert.Equal(t, 40, b.Stats().Limit, "0.5×10 + 0.5×1000 clamped to Max")
	assert.Equal(t, 1000.0, b.Stats().Estimate)
	alg.next = 0
	window()
	assert.Equal(t, 20, b.Stats().Limit, "0.5×40 + 0.5×0")
	window()
	window()
	assert.Equal(t, 5, b.Stats().Limit, "never below Min")
}

func TestNonFiniteEstimateKeepsTheLimit(t *testing.T) {
	alg := &fixed{next: 0}
	alg.next = alg.next / alg.next // NaN
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 10},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }})
	runTyped(t, b, clock, 10, 10, 200*ms)
	assert.Equal(t, 10, b.Stats().Limit)
}

func TestOverloadErrorMarksTheWindowDropped(t *testing.T) {
	alg := &fixed{next: 10}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 10},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }})
	for i := range 10 {
		c, _ := b.TryAcquire()
		clock.Advance(20 * ms)
		var err error
		switch i {
		case 3:
			err = errors.New("bad request") // not an overload
		case 7:
			err = context.DeadlineExceeded
		}
		c.Finish(err)
	}
	require.Len(t, alg.samples, 1)
	assert.True(t, alg.samples[0].Dropped)
	assert.Equal(t, int64(1), b.Stats().Overloads)
}

func TestCustomIsOverload(t *testing.T) {
	errBusy := errors.New("503")
	alg := &fixed{next: 10}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 10}, adaptive.Config{
		Algorithm:  func() adaptive.Algorithm { return alg },
		IsOverload: func(err error) bool { return errors.Is(err, errBusy) },
	})
	c, _ := b.TryAcquire()
	clock.Advance(time.Second)
	c.Finish(context.DeadlineExceeded)
	require.Len(t, alg.samples, 1)
	assert.False(t, alg.samples[0].Dropped)
}

func TestRejectionsAreCountedOnEveryPath(t *testing.T) {
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: 1}, adaptive.Config{})
	c, ok := b.TryAcquire()
	require.True(t, ok)
	_, ok = b.TryAcquire() // no wait: rejected
	assert.False(t, ok)
	queued := b.AcquirePermissionAsync() // waits
	full := b.AcquirePermissionAsync()   // queue full: rejected at once
	assert.ErrorIs(t, full.Err(), bulkhead.ErrBulkheadFull)
	clock.Advance(time.Second) // the queued one times out
	assert.ErrorIs(t, queued.Err(), bulkhead.ErrBulkheadFull)
	assert.Equal(t, int64(3), b.Stats().Rejected)
	c.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.Acquire(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int64(3), b.Stats().Rejected, "a cancelled context is no rejection")
}

func TestQueuedGrantIsCountedBeforeTheCallersCallback(t *testing.T) {
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded}, adaptive.Config{})
	first := b.AcquirePermissionAsync()
	require.NoError(t, first.Err())
	second := b.AcquirePermissionAsync()
	var inFlightAtGrant int
	second.OnDone(func(err error) {
		inFlightAtGrant = b.Stats().InFlight
		clock.Advance(50 * ms)
		b.FinishCall()
	})
	clock.Advance(50 * ms)
	b.FinishCall() // grants second, whose callback finishes at once
	assert.Equal(t, 1, inFlightAtGrant)
	assert.Equal(t, 0, b.Stats().InFlight)
}

func TestAcquireBlocksUntilGranted(t *testing.T) {
	b, _ := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1}, adaptive.Config{})
	c, err := b.Acquire(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, b.Stats().InFlight)
	c.Finish(nil)
	assert.Equal(t, 0, b.Stats().InFlight)
}

func TestInvalidConfigsAreRefusedWithTheField(t *testing.T) {
	sem, err := bulkhead.New("walmart", bulkhead.DefaultConfig())
	require.NoError(t, err)
	for _, tc := range []struct {
		cfg   adaptive.Config
		field string
	}{
		{adaptive.Config{Min: -1}, "Min"},
		{adaptive.Config{Max: -1}, "Max"},
		{adaptive.Config{Min: 10, Max: 5}, "Max"},
		{adaptive.Config{Min: 2000}, "Max"},
		{adaptive.Config{Initial: -1}, "Initial"},
		{adaptive.Config{Smoothing: 1}, "Smoothing"},
		{adaptive.Config{Smoothing: -0.1}, "Smoothing"},
		{adaptive.Config{Window: adaptive.Window{MinDuration: -1}}, "Window.MinDuration"},
		{adaptive.Config{Window: adaptive.Window{MaxDuration: 50 * ms}}, "Window.MaxDuration"},
		{adaptive.Config{Window: adaptive.Window{MinSamples: -1}}, "Window.MinSamples"},
		{adaptive.Config{Algorithm: func() adaptive.Algorithm { return nil }}, "Algorithm"},
	} {
		_, err := adaptive.New(sem, tc.cfg)
		var ce *adaptive.ConfigError
		if assert.ErrorAs(t, err, &ce, "%+v", tc.cfg) {
			assert.Equal(t, tc.field, ce.Field)
			assert.Equal(t, "walmart", ce.Name)
			assert.ErrorIs(t, err, adaptive.ErrInvalidConfig)
			assert.Contains(t, err.Error(), `"walmart"`)
		}
	}
	_, err = adaptive.New(sem, adaptive.Config{}, adaptive.WithClock(nil))
	assert.ErrorContains(t, err, "clock must not be nil")
	assert.Panics(t, func() { _, _ = adaptive.New(nil, adaptive.Config{}) })
}
