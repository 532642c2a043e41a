package adaptive_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead/adaptive"
)

const ms = time.Millisecond

var errDeadline = context.DeadlineExceeded

func sample(rtt time.Duration, inFlight int) adaptive.Sample {
	return adaptive.Sample{RTT: rtt, InFlight: inFlight}
}

func TestAIMDGrowsByOneWhenHalfTheLimitIsUsed(t *testing.T) {
	a := &adaptive.AIMD{}
	assert.Equal(t, 21.0, a.Update(20, sample(10*ms, 10)))
	assert.Equal(t, 20.0, a.Update(20, sample(10*ms, 9)), "less than half used: hold")
}

func TestAIMDBacksOffOnDropOrTimeout(t *testing.T) {
	a := &adaptive.AIMD{}
	assert.Equal(t, 18.0, a.Update(20, adaptive.Sample{RTT: 10 * ms, InFlight: 20, Dropped: true}))
	assert.Equal(t, 18.0, a.Update(20, sample(6*time.Second, 20)), "RTT above the 5 s default timeout is a drop")
	b := &adaptive.AIMD{BackoffRatio: 0.5, Timeout: 100 * ms}
	assert.Equal(t, 10.0, b.Update(20, sample(101*ms, 20)))
	c := &adaptive.AIMD{BackoffRatio: 2} // out of range: the default
	assert.Equal(t, 18.0, c.Update(20, adaptive.Sample{RTT: ms, InFlight: 1, Dropped: true}))
}

func TestVegasLearnsNoLoadThenGrowsWithoutQueue(t *testing.T) {
	v := &adaptive.Vegas{}
	assert.Equal(t, 20.0, v.Update(20, sample(100*ms, 20)), "first sample only sets the no-load RTT")
	// Same RTT: no queue, log10(20) = 1, grows by beta = 6.
	assert.Equal(t, 26.0, v.Update(20, sample(100*ms, 20)))
}

func TestVegasShrinksOnQueueAndDrop(t *testing.T) {
	v := &adaptive.Vegas{}
	v.Update(100, sample(100*ms, 100))
	// RTT doubled: queue = 100 × (1 − 1/2) = 50 > beta (12): shrink by log10 = 2.
	assert.Equal(t, 98.0, v.Update(100, sample(200*ms, 100)))
	assert.Equal(t, 98.0, v.Update(100, adaptive.Sample{RTT: 100 * ms, InFlight: 1, Dropped: true}))
	assert.Equal(t, 100.0, v.Update(100, sample(200*ms, 40)), "far from the limit: hold")
}

func TestGradient2GrowsBySmoothedQueueSizeWhileRTTIsSteady(t *testing.T) {
	g := &adaptive.Gradient2{}
	// gradient 1: 20 + 0.2 × 4.
	assert.InDelta(t, 20.8, g.Update(20, sample(100*ms, 20)), 1e-9)
	assert.Equal(t, 20.0, g.Update(20, sample(100*ms, 9)), "fewer than half the permits used: hold")
}

func TestGradient2ShrinksWhenRTTExceedsTolerance(t *testing.T) {
	g := &adaptive.Gradient2{}
	for range 10 {
		g.Update(100, sample(100*ms, 100))
	}
	// RTT 4× the average: gradient clamps at 0.5: 100 × 0.8 + (50 + 4) × 0.2.
	got := g.Update(100, sample(400*ms, 100))
	assert.InDelta(t, 90.8, got, 0.5)
}

// fluid drives c for windows windows of 50 calls on a partner that serves
// capacity calls at once in base each and queues the rest (RTT = base ×
// limit/capacity once the limit is saturated and above it), with a spread
// of dev × RTT; it returns the last limit.
func fluid(c adaptive.Algorithm, limit float64, capacity int, base time.Duration, dev float64, windows int) float64 {
	for range windows {
		rtt := time.Duration(float64(base) * max(1, limit/float64(capacity)))
		limit = max(1, c.Update(limit, adaptive.Sample{RTT: rtt, RTTDev: time.Duration(dev * float64(rtt)), N: 50, InFlight: int(limit)}))
	}
	return limit
}

func TestCapacityFindsTheCapacityFromBelow(t *testing.T) {
	got := fluid(&adaptive.Capacity{}, 6, 30, 50*ms, 0.3, 200)
	assert.GreaterOrEqual(t, got, 30.0)
	assert.LessOrEqual(t, got, 36.0)
}

// The no-load RTT may not come from calls that queued: started at five
// times the capacity, the first RTTs are all queued ones.
func TestCapacityFindsTheCapacityFromAbove(t *testing.T) {
	got := fluid(&adaptive.Capacity{}, 150, 30, 50*ms, 0.3, 200)
	assert.GreaterOrEqual(t, got, 30.0)
	assert.LessOrEqual(t, got, 36.0)
}

func TestCapacityFollowsACapacityThatDropsAndRecovers(t *testing.T) {
	c := &adaptive.Capacity{}
	limit := fluid(c, 30, 30, 50*ms, 0.1, 200)
	limit = fluid(c, limit, 10, 50*ms, 0.1, 200)
	assert.InDelta(t, 11, limit, 1.5, "after the drop to 10")
	limit = fluid(c, limit, 30, 50*ms, 0.1, 300)
	assert.GreaterOrEqual(t, limit, 30.0, "after the recovery to 30")
	assert.LessOrEqual(t, limit, 36.0)
}

// One window's mean is not evidence: a window 30 % slower than the no-load
// RTT, but of a few calls with a wide spread, cuts nothing.
func TestCapacityDoesNotCutOnOneNoisyWindow(t *testing.T) {
	c := &adaptive.Capacity{}
	limit := fluid(c, 30, 40, 50*ms, 0.3, 100) // below the capacity: no queue
	require.Greater(t, limit, 30.0)
	next := c.Update(limit, adaptive.Sample{RTT: 65 * ms, RTTDev: 30 * ms, N: 20, InFlight: int(limit)})
	assert.GreaterOrEqual(t, next, limit)
}

// The floor rule: when the partner's base latency doubles, cuts do not
// lower the RTT, so they are undone instead of taking the limit to the
// floor.
func TestCapacityUndoesCutsThatDoNotLowerTheRTT(t *testing.T) {
	c := &adaptive.Capacity{}
	limit := fluid(c, 30, 30, 50*ms, 0.1, 200)
	require.GreaterOrEqual(t, limit, 30.0)
	lowest := limit
	for range 300 { // every call now takes 100 ms: C is still 30
		limit = fluid(c, limit, 30, 100*ms, 0.1, 1)
		lowest = min(lowest, limit)
	}
	assert.GreaterOrEqual(t, lowest, 13.0, "the cuts went on past one halving of 28")
	assert.GreaterOrEqual(t, limit, 30.0, "the cuts were not undone")
	assert.LessOrEqual(t, limit, 36.0)
}

func TestCapacityHoldsWhenTheLimitIsNotUsed(t *testing.T) {
	c := &adaptive.Capacity{}
	limit := fluid(c, 30, 30, 50*ms, 0.1, 200)
	for range 100 {
		next := c.Update(limit, adaptive.Sample{RTT: 50 * ms, RTTDev: 5 * ms, N: 50, InFlight: int(limit / 2)})
		assert.GreaterOrEqual(t, next, limit, "a lull cut the limit")
		limit = next
	}
}

func TestByNameKnowsEveryBuiltInAlgorithm(t *testing.T) {
	for _, name := range adaptive.Names() {
		f, ok := adaptive.ByName(name)
		if assert.True(t, ok, name) {
			assert.NotNil(t, f())
		}
	}
	_, ok := adaptive.ByName("gradient")
	assert.False(t, ok)
}

// A partner with two kinds of request (20 and 200 ms: one call's RTT
// varies by 130 % of the mean, and the mean of a window of 20 calls by
// ±29 %), fed as matched windows (the plain methods, Watch), which carry
// the window's mean but no spread. Capacity takes the spread from the
// means of consecutive windows and does not act on the wobble. Before, an
// epoch of one matched window had no spread at all, so a wobble of its
// mean proved a queue, and the limit was cut on noise down to a few
// permits.
func TestCapacityDoesNotCutOnMatchedWindowsOfANoisyPartner(t *testing.T) {
	c := &adaptive.Capacity{}
	rng := rand.New(rand.NewPCG(7, 7))
	limit, lowest := 30.0, 30.0
	for i := range 600 {
		// C is 30: RTT = base × limit/C above it
		base := 56 * (1 + 1.3/math.Sqrt(20)*rng.NormFloat64()) * max(1, limit/30)
		rtt := time.Duration(max(1, base) * float64(ms))
		limit = max(1, c.Update(limit, adaptive.Sample{RTT: rtt, N: 20, InFlight: int(limit), Matched: true}))
		if i >= 100 { // after the descent that looks for C from above
			lowest = min(lowest, limit)
		}
	}
	assert.GreaterOrEqual(t, lowest, 20.0, "cut on noise")
}

// Started far above C on a partner whose callers give up at 500 ms: the
// first epochs time out (their RTTs are cut short at the deadline), so the
// RTT seems to fall less than the limit on the first step down. The
// descent must not take that for the crossing of C (it did, and kept the
// limit near 100 with C = 10, the no-load RTT a queued 490 ms).
func TestCapacityDescentIsNotFooledByRTTsCutShortByTimeouts(t *testing.T) {
	c := &adaptive.Capacity{}
	limit := 140.0
	for range 300 {
		rtt := 50 * ms * time.Duration(max(limit, 10)) / 10 // C = 10, base 50 ms
		drops := 0
		if rtt > 500*ms {
			rtt, drops = 500*ms, 50
		}
		limit = max(1, c.Update(limit, adaptive.Sample{RTT: rtt, RTTDev: rtt / 10, N: 50, InFlight: int(limit), Dropped: drops > 0, Drops: drops}))
	}
	assert.LessOrEqual(t, limit, 15.0)
	assert.GreaterOrEqual(t, limit, 9.0)
}

// Calls that time out are overload whatever the RTTs say: the RTTs of
// calls given up at the deadline are cut short, and on a partner with a
// fast and a slow kind of call the mean RTT can stay near the no-load RTT
// while the fast kind times out in the queue. Before, such epochs grew
// the limit (and were folded into the no-load RTT, which crept up to
// 250 ms for a 56 ms partner in the scenario matrix).
func TestCapacityCutsWhenCallsTimeOutWhateverTheRTT(t *testing.T) {
	c := &adaptive.Capacity{}
	limit := fluid(c, 6, 30, 50*ms, 0.1, 200)
	require.GreaterOrEqual(t, limit, 30.0)
	start := limit
	for range 20 {
		limit = max(1, c.Update(limit, adaptive.Sample{RTT: 51 * ms, RTTDev: 5 * ms, N: 50, InFlight: int(limit), Dropped: true, Drops: 15}))
	}
	assert.Less(t, limit, 0.9*start)
}

// A descent that reaches its lowest limit while calls still time out does
// not take their RTTs (cut short at the deadline) for the no-load RTT: it
// waits at that limit for an epoch without timeouts. Before, the no-load
// RTT became the deadline (here 2 s for a 50 ms partner), so the algorithm
// could not see a queue again until healthy epochs had diluted it.
func TestCapacityDescentAtItsLowestLimitTakesNoNoLoadRTTFromTimeouts(t *testing.T) {
	c := &adaptive.Capacity{}
	limit := 16.0
	for range 100 { // the partner answers nothing in time
		limit = max(1, c.Update(limit, adaptive.Sample{RTT: 2 * time.Second, RTTDev: 10 * ms, N: 20, InFlight: int(limit), Dropped: true, Drops: 20}))
	}
	require.Equal(t, 4.0, limit, "the descent stops at 4 permits")
	assert.Zero(t, c.NoLoadRTT(), "no no-load RTT from calls that timed out")
	for range 100 { // it recovers: 50 ms, no queue
		limit = max(1, c.Update(limit, adaptive.Sample{RTT: 50 * ms, RTTDev: 5 * ms, N: 20, InFlight: int(limit)}))
	}
	assert.InDelta(t, float64(50*ms), c.NoLoadRTT(), float64(5*ms))
	assert.Greater(t, limit, 4.0)
}
