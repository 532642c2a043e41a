package adaptive_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// perCallLevels returns the levels (Sample.InFlight) and RTTs of alg's
// per-call samples.
func perCallLevels(t *testing.T, alg *fixed) (levels []int, rtts []time.Duration) {
	t.Helper()
	for _, s := range alg.samples {
		require.True(t, s.PerCall)
		levels = append(levels, s.InFlight)
		rtts = append(rtts, s.RTT)
	}
	return levels, rtts
}

// A plain call's per-call sample carries the level of the grant it is
// matched with, the oldest: the calls in flight once that call was
// granted, itself included, not the calls in flight at the finish.
func TestPerCallPlainCallsCarryTheLevelOfTheirGrant(t *testing.T) {
	alg := &fixed{next: 10}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 10},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, Window: adaptive.Window{PerCall: true}})
	require.True(t, b.AcquirePermissionAsync().Granted()) // level 1
	clock.Advance(5 * ms)
	require.True(t, b.AcquirePermissionAsync().Granted()) // level 2
	require.True(t, b.AcquirePermissionAsync().Granted()) // level 3
	clock.Advance(10 * ms)
	b.FinishCall()                                        // matched with the first: 15 ms at level 1
	require.True(t, b.AcquirePermissionAsync().Granted()) // level 3 again
	clock.Advance(10 * ms)
	b.FinishCall()        // the second: 20 ms at level 2
	b.FinishCall()        // the third: 20 ms at level 3
	b.ReleasePermission() // the fourth did not run: no sample
	levels, rtts := perCallLevels(t, alg)
	assert.Equal(t, []int{1, 2, 3}, levels)
	assert.Equal(t, []time.Duration{15 * ms, 20 * ms, 20 * ms}, rtts)
}

// A watched call whose CallFinished carries its duration is matched with
// its own grant, the one nearest to its start, even when it finishes
// before calls granted earlier: its sample has its exact RTT and the level
// of its grant. A finish without a duration still takes the oldest.
func TestWatchedTimedCallsCarryTheLevelOfTheirOwnGrant(t *testing.T) {
	clock := testkit.NewVirtualClock(epoch)
	sem, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithClock(clock))
	require.NoError(t, err)
	testkit.CheckPermits(t, sem)
	alg := &fixed{next: 10}
	b, err := adaptive.Watch(sem, adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg },
		Window: adaptive.Window{PerCall: true}}, adaptive.WithClock(clock))
	require.NoError(t, err)
	defer b.Stop()

	var starts []bulkhead.CallStart
	for range 4 { // levels 1 to 4, granted 10 ms apart
		require.True(t, sem.TryAcquirePermission())
		starts = append(starts, sem.StartCall())
		clock.Advance(10 * ms)
	}
	// now 40 ms: the calls finish in the order 3, 1, 4; then 2 untimed
	sem.FinishCallStarted(starts[2]) // 20 ms at level 3
	clock.Advance(5 * ms)
	sem.FinishCallStarted(starts[0]) // 45 ms at level 1
	sem.FinishCallStarted(starts[3]) // 15 ms at level 4
	clock.Advance(5 * ms)
	sem.FinishCall() // the oldest left: the second, 40 ms at level 2
	levels, rtts := perCallLevels(t, alg)
	assert.Equal(t, []int{3, 1, 4, 2}, levels)
	assert.Equal(t, []time.Duration{20 * ms, 45 * ms, 15 * ms, 40 * ms}, rtts)
	assert.Equal(t, 0, b.Stats().InFlight)
}

// Calls made through an operator on a Bulkhead made by New (StartCall after
// the grant, FinishCallStarted at the end) are timed from their own start,
// not matched with the oldest grant: a call that overtakes an older one
// still has its exact RTT and its grant's level. Both with no listener on
// the semaphore (the controller's own starts) and with one (the
// semaphore's, whose CallFinished then carries the duration).
func TestPlainOperatorCallsAreTimedFromTheirOwnStart(t *testing.T) {
	for _, listener := range []bool{false, true} {
		t.Run(map[bool]string{false: "no listener", true: "listener"}[listener], func(t *testing.T) {
			alg := &fixed{next: 10}
			b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 10},
				adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, Window: adaptive.Window{PerCall: true}})
			var ev *testkit.EventLog
			if listener {
				ev = testkit.RecordEvents(t, b.Semaphore())
			}
			var subs []*testkit.TestSubscriber[int]
			var emits []flowable.Emitter[int]
			for range 3 { // levels 1 to 3, granted 10 ms apart
				sub := testkit.NewTestSubscriber[int]()
				flowable.Bulkhead(b, flowable.Create(func(e flowable.Emitter[int]) { emits = append(emits, e) })).Subscribe(sub)
				subs = append(subs, sub)
				clock.Advance(10 * ms)
			}
			// now 30 ms: the third finishes first, then the first, then the second
			for _, i := range []int{2, 0, 1} {
				emits[i].Complete()
				subs[i].AssertResult(t)
				clock.Advance(5 * ms)
			}
			levels, rtts := perCallLevels(t, alg)
			assert.Equal(t, []int{3, 1, 2}, levels)
			assert.Equal(t, []time.Duration{10 * ms, 35 * ms, 30 * ms}, rtts)
			for _, s := range alg.samples {
				assert.False(t, s.Matched, "a timed call's sample is not Matched")
			}
			if listener {
				assert.Equal(t, []time.Duration{10 * ms, 35 * ms, 30 * ms}, finishedDurations(ev))
			}
		})
	}
}
