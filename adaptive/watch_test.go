package adaptive_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Code that holds the *Semaphore itself (an integration) is timed through
// the semaphore's events.
func TestWatchTimesCallsMadeOnTheSemaphoreDirectly(t *testing.T) {
	clock := testkit.NewVirtualClock(epoch)
	sem, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithClock(clock))
	require.NoError(t, err)
	testkit.CheckPermits(t, sem)
	alg := &fixed{next: 12}
	b, err := adaptive.Watch(sem, adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }}, adaptive.WithClock(clock))
	require.NoError(t, err)
	defer b.Stop()

	for range 10 {
		require.True(t, sem.TryAcquirePermission())
	}
	assert.False(t, sem.TryAcquirePermission())
	clock.Advance(150 * ms)
	for range 10 {
		sem.FinishCall()
	}
	require.Len(t, alg.samples, 1)
	assert.Equal(t, adaptive.Sample{RTT: 150 * ms, N: 10, InFlight: 10, Elapsed: 150 * ms, Matched: true}, alg.samples[0])
	assert.Equal(t, 12, sem.Config().MaxConcurrentCalls)
	assert.Equal(t, int64(1), b.Stats().Rejected)
	assert.Equal(t, 0, b.Stats().InFlight)

	b.Stop()
	b.Stop()
	require.True(t, sem.TryAcquirePermission())
	clock.Advance(time.Second)
	sem.FinishCall()
	assert.Len(t, alg.samples, 1, "no sample after Stop")
}

// A watched call that finishes with its start (FinishCallStarted, as a
// Lease, the operators and Call.Finish do) gives its exact RTT through the
// event's CallDuration: the window is not Matched and has its spread. Two
// calls granted 100 ms apart that finish in the other order have RTTs of
// 50 and 300 ms; matched with the oldest grant they would be 150 and
// 200 ms, with no spread known.
func TestWatchTakesExactRTTsFromCallDurations(t *testing.T) {
	clock := testkit.NewVirtualClock(epoch)
	sem, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithClock(clock))
	require.NoError(t, err)
	testkit.CheckPermits(t, sem)
	alg := &fixed{next: 10}
	b, err := adaptive.Watch(sem, adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, Window: adaptive.Window{MinSamples: 2}}, adaptive.WithClock(clock))
	require.NoError(t, err)
	defer b.Stop()

	// on the semaphore itself, as an integration holding it does
	require.True(t, sem.TryAcquirePermission())
	first := sem.StartCall()
	clock.Advance(100 * ms)
	require.True(t, sem.TryAcquirePermission())
	second := sem.StartCall()
	clock.Advance(50 * ms)
	sem.FinishCallStarted(second)
	clock.Advance(150 * ms)
	sem.FinishCallStarted(first)
	require.Len(t, alg.samples, 1)
	exact := func(s adaptive.Sample) {
		t.Helper()
		assert.InDelta(t, 250*float64(ms)/math.Sqrt2, float64(s.RTTDev), 10, "the spread of 50 and 300 ms")
		s.RTTDev = 0
		assert.Equal(t, adaptive.Sample{RTT: 175 * ms, N: 2, InFlight: 2, Elapsed: 300 * ms}, s)
	}
	exact(alg.samples[0])

	// through the watched bulkhead's own typed calls
	a, ok := b.TryAcquire()
	require.True(t, ok)
	clock.Advance(100 * ms)
	c, ok := b.TryAcquire()
	require.True(t, ok)
	clock.Advance(50 * ms)
	c.Finish(nil)
	clock.Advance(150 * ms)
	a.Finish(nil)
	require.Len(t, alg.samples, 2)
	exact(alg.samples[1])
}

// The keyed Lease that bulkheadhttp's Transport and contrib/grpc hold
// keeps its call's start, so WatchRegistry times their calls exactly.
func TestWatchRegistryTakesExactRTTsFromLeases(t *testing.T) {
	clock := testkit.NewVirtualClock(epoch)
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	require.NoError(t, err)
	testkit.CheckRegistry(t, reg)
	alg := &fixed{next: 10}
	ar, err := adaptive.WatchRegistry(reg, adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, Window: adaptive.Window{MinSamples: 2}}, adaptive.WithClock(clock))
	require.NoError(t, err)
	defer ar.Stop()

	first, err := reg.TryAcquirePermission("walmart", bulkhead.CallOptions{})
	require.NoError(t, err)
	clock.Advance(100 * ms)
	second, err := reg.TryAcquirePermission("walmart", bulkhead.CallOptions{})
	require.NoError(t, err)
	clock.Advance(50 * ms)
	second.FinishCall()
	clock.Advance(150 * ms)
	first.FinishCall()
	require.Len(t, alg.samples, 1)
	s := alg.samples[0]
	assert.False(t, s.Matched)
	assert.Equal(t, 175*ms, s.RTT)
	assert.InDelta(t, 250*float64(ms)/math.Sqrt2, float64(s.RTTDev), 10, "the spread of 50 and 300 ms")
}

func TestWatchedBulkheadMethodsAreCountedOnce(t *testing.T) {
	clock := testkit.NewVirtualClock(epoch)
	sem, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithClock(clock))
	require.NoError(t, err)
	testkit.CheckPermits(t, sem)
	alg := &fixed{next: 10}
	b, err := adaptive.Watch(sem, adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, Window: adaptive.Window{MinSamples: 1}}, adaptive.WithClock(clock))
	require.NoError(t, err)
	defer b.Stop()
	var calls []adaptive.Call
	for range 5 {
		c, ok := b.TryAcquire()
		require.True(t, ok)
		calls = append(calls, c)
	}
	require.NoError(t, b.AcquirePermissionAsync().Err())
	assert.Equal(t, 6, b.Stats().InFlight)
	clock.Advance(200 * ms)
	b.ReleasePermission() // the async one did not run
	for _, c := range calls {
		c.Finish(errDeadline)
	}
	require.Len(t, alg.samples, 1)
	assert.Equal(t, 200*ms, alg.samples[0].RTT)
	assert.True(t, alg.samples[0].Dropped)
	assert.Equal(t, 0, b.Stats().InFlight)
}

func TestWatchReconcilesReleasesItCannotSee(t *testing.T) {
	clock := testkit.NewVirtualClock(epoch)
	sem, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithClock(clock))
	require.NoError(t, err)
	testkit.CheckPermits(t, sem)
	b, err := adaptive.Watch(sem, adaptive.Config{Algorithm: func() adaptive.Algorithm { return &fixed{next: 10} },
		Window: adaptive.Window{MinDuration: 1, MaxDuration: 1, MinSamples: 1}}, adaptive.WithClock(clock))
	require.NoError(t, err)
	defer b.Stop()
	require.True(t, sem.TryAcquirePermission())
	sem.ReleasePermission() // no event: the controller still counts it
	assert.Equal(t, 1, b.Stats().InFlight)
	windows := b.Stats().Windows
	window := func() { // one call, one window
		require.True(t, sem.TryAcquirePermission())
		clock.Advance(400 * ms)
		sem.FinishCall()
		windows++
		require.Equal(t, windows, b.Stats().Windows)
	}
	window()
	assert.Equal(t, 1, b.Stats().InFlight, "one window: could be a finish on its way")
	window()
	assert.Equal(t, 0, b.Stats().InFlight, "two windows: dropped")
}

func TestWatchRegistryWatchesSemaphoresCreatedLater(t *testing.T) {
	clock := testkit.NewVirtualClock(epoch)
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 10, MaxWaitDuration: time.Second, MaxQueuedCalls: 10},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	require.NoError(t, err)
	testkit.CheckRegistry(t, reg)
	ar, err := adaptive.WatchRegistry(reg, adaptive.Config{Algorithm: func() adaptive.Algorithm { return &adaptive.AIMD{} }}, adaptive.WithClock(clock))
	require.NoError(t, err)
	defer ar.Stop()

	sem, err := reg.Get("walmart") // created after WatchRegistry, used directly
	require.NoError(t, err)
	for range 10 {
		require.True(t, sem.TryAcquirePermission())
	}
	clock.Advance(150 * ms)
	for range 10 {
		sem.FinishCall()
	}
	b, ok := ar.Find("walmart")
	require.True(t, ok)
	assert.Equal(t, 11, sem.Config().MaxConcurrentCalls, "AIMD grew the limit from the events")
	got, err := ar.Get("walmart")
	require.NoError(t, err)
	assert.Same(t, b, got)
}

// A controller created while calls are queued applies its initial limit
// after it is registered: the grants that ChangeConfig publishes come back
// to the registry's listener without a deadlock.
func TestWatchRegistryAppliesInitialLimitWithCallsQueued(t *testing.T) {
	clock := testkit.NewVirtualClock(epoch)
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: 10},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	require.NoError(t, err)
	testkit.CheckRegistry(t, reg)
	sem, _ := reg.Get("walmart")
	require.True(t, sem.TryAcquirePermission())
	queued := sem.AcquirePermissionAsync()
	ar, err := adaptive.WatchRegistry(reg, adaptive.Config{Initial: 2}, adaptive.WithClock(clock))
	require.NoError(t, err)
	defer ar.Stop()
	b, err := ar.Get("walmart") // applies 2: grants the queued call
	require.NoError(t, err)
	assert.NoError(t, queued.Err())
	assert.Equal(t, 2, b.Stats().InFlight)
	sem.FinishCall()
	sem.FinishCall()
	assert.Equal(t, 0, b.Stats().InFlight)
}
