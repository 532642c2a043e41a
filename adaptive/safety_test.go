package adaptive_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestMaxCutPerSecondBoundsHowFastTheLimitFalls(t *testing.T) {
	alg := &fixed{next: 1}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 100},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }})
	for range 10 { // one second of 100 ms windows
		runTyped(t, b, clock, 10, 10, 100*ms)
	}
	assert.Equal(t, 50, b.Stats().Limit, "the algorithm asked for 1: half per second at most")
	for range 10 {
		runTyped(t, b, clock, 10, 10, 100*ms)
	}
	assert.Equal(t, 25, b.Stats().Limit)
}

func TestMaxCutPerSecondOfOneTurnsTheBoundOff(t *testing.T) {
	alg := &fixed{next: 1}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 100},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, MaxCutPerSecond: 1})
	runTyped(t, b, clock, 10, 10, 100*ms)
	assert.Equal(t, 1, b.Stats().Limit)
}

func TestMaxCutPerSecondOutsideZeroToOneIsRejected(t *testing.T) {
	for _, v := range []float64{-0.1, 1.5} {
		err := adaptive.Config{MaxCutPerSecond: v}.Validate()
		var ce *adaptive.ConfigError
		require.True(t, errors.As(err, &ce), "%v: %v", v, err)
		assert.Equal(t, "MaxCutPerSecond", ce.Field)
	}
}

// floorRecorder collects floor events; the listener may re-enter the Bulkhead.
type floorRecorder struct {
	mu     sync.Mutex
	events []adaptive.FloorEvent
	b      *adaptive.Bulkhead
	stats  []adaptive.Stats
}

func (r *floorRecorder) on(e adaptive.FloorEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	if r.b != nil {
		r.stats = append(r.stats, r.b.Stats()) // re-enters: no lock held
	}
}

func TestOnFloorReportsTheLimitReachingAndLeavingTheFloor(t *testing.T) {
	alg := &fixed{next: 1}
	clock := testkit.NewVirtualClock(epoch)
	sem, err := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 4}, bulkhead.WithClock(clock))
	require.NoError(t, err)
	var r floorRecorder
	b, err := adaptive.New(sem, adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, Min: 2, MaxCutPerSecond: 1},
		adaptive.WithClock(clock), adaptive.OnFloor(r.on))
	require.NoError(t, err)
	r.b = b
	testkit.CheckPermits(t, b)

	runTyped(t, b, clock, 10, 2, 50*ms) // one window: the limit falls to the floor
	require.Len(t, r.events, 1)
	assert.Equal(t, adaptive.FloorEvent{Name: "walmart", AtFloor: true, Limit: 2, Time: epoch.Add(250 * ms)}, r.events[0])
	assert.True(t, r.stats[0].AtFloor)
	runTyped(t, b, clock, 10, 2, 50*ms)
	assert.Len(t, r.events, 1, "still at the floor: no new event")
	st := b.Stats()
	assert.True(t, st.AtFloor)
	assert.Equal(t, 250*ms, st.FloorTime, "at the floor since 250 ms, now 500 ms")

	alg.next = 3
	runTyped(t, b, clock, 10, 2, 50*ms)
	require.Len(t, r.events, 2)
	assert.Equal(t, adaptive.FloorEvent{Name: "walmart", AtFloor: false, Limit: 3, Time: epoch.Add(750 * ms), Duration: 500 * ms}, r.events[1])
	st = b.Stats()
	assert.False(t, st.AtFloor)
	assert.Equal(t, 500*ms, st.FloorTime)
}

func TestStatsCountTimeAtTheFloorFromTheStart(t *testing.T) {
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1}, adaptive.Config{})
	clock.Advance(2 * time.Second)
	st := b.Stats()
	assert.True(t, st.AtFloor, "started at Min")
	assert.Equal(t, 2*time.Second, st.FloorTime)
}

func TestPerCallGivesEveryCallToTheAlgorithm(t *testing.T) {
	alg := &fixed{next: 10}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 10},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, Window: adaptive.Window{PerCall: true}})
	c1, _ := b.TryAcquire()
	c2, _ := b.TryAcquire()
	clock.Advance(10 * ms)
	c1.Finish(nil)
	clock.Advance(10 * ms)
	c2.Finish(nil)
	c3, _ := b.TryAcquire()
	clock.Advance(5 * ms)
	c3.Finish(errDeadline)
	assert.Equal(t, []adaptive.Sample{
		{RTT: 10 * ms, N: 1, InFlight: 1, Elapsed: 10 * ms, PerCall: true},
		{RTT: 20 * ms, N: 1, InFlight: 2, Elapsed: 10 * ms, PerCall: true},
		{RTT: 5 * ms, N: 1, InFlight: 1, Dropped: true, Drops: 1, Elapsed: 5 * ms, PerCall: true},
	}, alg.samples)
}

// A per-call sample's Elapsed is the time since the previous sample (the
// first: since the Bulkhead was made), so the samples' Elapsed add up to
// the time since the start, idle gaps and calls that gave their permit
// back unfinished included.
func TestPerCallElapsedIsTheTimeSinceThePreviousSample(t *testing.T) {
	alg := &fixed{next: 10}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 10},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, Window: adaptive.Window{PerCall: true}})
	clock.Advance(300 * ms) // idle since the start
	c1, _ := b.TryAcquire()
	clock.Advance(40 * ms)
	c1.Finish(nil)
	unrun, _ := b.TryAcquire()
	clock.Advance(70 * ms)
	unrun.Release() // no sample: its time goes to the next one
	c2, _ := b.TryAcquire()
	c3, _ := b.TryAcquire()
	clock.Advance(25 * ms)
	c2.Finish(nil)
	c3.Finish(nil) // at the same instant
	var sum time.Duration
	var got []time.Duration
	for _, s := range alg.samples {
		assert.True(t, s.PerCall)
		got = append(got, s.Elapsed)
		sum += s.Elapsed
	}
	assert.Equal(t, []time.Duration{340 * ms, 95 * ms, 0}, got)
	assert.Equal(t, 435*ms, sum, "the time since the start")
}

func TestDiscardShortDropsAWindowWithTooFewCalls(t *testing.T) {
	alg := &fixed{next: 10}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 10},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg },
			Window: adaptive.Window{MinDuration: time.Second, MaxDuration: time.Second, DiscardShort: true}})
	runTyped(t, b, clock, 5, 1, 250*ms) // 5 calls over 1.25 s: discarded
	assert.Empty(t, alg.samples)
	runTyped(t, b, clock, 20, 5, 100*ms) // 20 calls in 400 ms, then one more window's worth
	runTyped(t, b, clock, 10, 5, 400*ms)
	require.Len(t, alg.samples, 1)
	assert.GreaterOrEqual(t, alg.samples[0].N, 10)
}
