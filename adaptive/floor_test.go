package adaptive_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
)

// floorRun drives an algorithm through the controller with windowed
// samples (a window per round of calls) on a virtual clock.
type floorRun struct {
	b   *adaptive.Bulkhead
	adv func(time.Duration)
}

func newFloorRun(t *testing.T, alg func() adaptive.Algorithm, lo, hi int) *floorRun {
	t.Helper()
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: hi}, adaptive.Config{
		Algorithm: alg, Min: lo, Max: hi,
		Window: adaptive.Window{MinDuration: 1, MaxDuration: 1, MinSamples: 1},
	})
	return &floorRun{b: b, adv: clock.Advance}
}

// rounds runs n rounds of up to k(i) calls (as many as the limit lets in)
// that all take rtt, and returns the limit after each.
func (r *floorRun) rounds(n int, rtt time.Duration, k func(i int) int) []int {
	return r.run(n, k, func(int) time.Duration { return rtt }, nil)
}

// run is rounds with an RTT that depends on the calls in the round, all
// ending in err.
func (r *floorRun) run(n int, k func(i int) int, rtt func(calls int) time.Duration, err error) []int {
	limits := make([]int, n)
	for i := range n {
		var calls []adaptive.Call
		for range k(i) {
			c, ok := r.b.TryAcquire()
			if !ok {
				break
			}
			calls = append(calls, c)
		}
		r.adv(rtt(len(calls)))
		for _, c := range calls {
			c.Finish(err)
		}
		limits[i] = r.b.Stats().Limit
	}
	return limits
}

// queued is the RTT of a partner that serves c calls at once in base each.
func queued(base time.Duration, c int) func(int) time.Duration {
	return func(calls int) time.Duration { return base * time.Duration(max(c, calls)) / time.Duration(c) }
}

// all is every permit, in every round.
func all(int) int { return 1 << 20 }

// leaves returns the first round whose limit is above lo, or -1.
func leaves(limits []int, lo int) int {
	for i, l := range limits {
		if l > lo {
			return i
		}
	}
	return -1
}

// A burst of near-instant answers (cached responses, a fast error path)
// teaches Capacity a no-load RTT of 1 µs; then the partner answers at its
// normal 100 ms, every permit in use. With Min 20 and Max 24 the floor
// holds back every cut (at most 17 % of the limit), so the floor rule,
// which needs cuts of 20 %, never sees that they do not lower the RTT:
// the limit stayed at the floor for good. Two cuts held back at the floor
// with the same RTT now make that RTT the no-load RTT.
func TestCapacityLeavesTheFloorAfterNearZeroRTTs(t *testing.T) {
	for _, alg := range []string{adaptive.NameCapacity, adaptive.NameSetPoint} {
		t.Run(alg, func(t *testing.T) {
			newAlg, _ := adaptive.ByName(alg)
			r := newFloorRun(t, newAlg, 20, 24)
			r.rounds(100, time.Microsecond, all)
			limits := r.rounds(100, 100*time.Millisecond, all)
			require.Equal(t, 20, limits[1], "the RTT rose: the limit goes to the floor (%v)", limits)
			i := leaves(limits, 20)
			assert.True(t, i >= 0 && i <= 20, "left the floor at round %d: %v", i, limits)
			assert.Equal(t, 24, limits[len(limits)-1], "back at Max: %v", limits)
		})
	}
}

// Cache hits (1 µs) and misses (150 ms) at a low concurrency give
// Capacity a no-load RTT of 75 ms with a wide error; two rounds of
// timeouts then cut the limit to the floor (20) with a capacity estimate
// far below it (0.3). When the partner answers at 120 ms, no queue is
// proved against that uncertain no-load RTT, and no cut is asked for: the
// epochs never decided, and the no-load RTT was never refined, because
// the limit was above the capacity estimate. At the floor it is now
// refined all the same (no cut can go below the floor).
func TestCapacityRelearnsAnUncertainNoLoadRTTAtTheFloor(t *testing.T) {
	r := newFloorRun(t, func() adaptive.Algorithm { return &adaptive.Capacity{} }, 20, 30)
	for i := range 8 {
		rtt := time.Microsecond
		if i%2 == 1 {
			rtt = 150 * time.Millisecond
		}
		r.rounds(1, rtt, func(int) int { return 10 })
	}
	r.run(2, all, queued(10*time.Second, 1000), context.DeadlineExceeded)
	limits := r.rounds(100, 120*time.Millisecond, all)
	require.Equal(t, 20, limits[0], "the timeouts took the limit to the floor")
	i := leaves(limits, 20)
	assert.True(t, i >= 0 && i <= 30, "left the floor at round %d: %v", i, limits)
	assert.Equal(t, 30, limits[len(limits)-1], "back at Max: %v", limits)
}

// Hinge with windowed samples measures S = 50 ms from windows at every
// level; then the partner's latency doubles while the limit is at the
// floor (Min 20, Max 24), every permit in use. Its probes are held at the
// floor, where all calls are at one level and measure nothing, so the old
// S read as a queue at a C of about 12 and the limit stayed at the floor.
// A probe held at the floor now takes its calls' mean RTT as S.
func TestHingeLeavesTheFloorWhenTheLatencyRoseThere(t *testing.T) {
	r := newFloorRun(t, func() adaptive.Algorithm { return &adaptive.Hinge{} }, 20, 24)
	r.rounds(100, 50*time.Millisecond, func(i int) int { return 1 + i%24 })
	limits := r.rounds(150, 100*time.Millisecond, all)
	require.Equal(t, 20, limits[2], "the RTT rose: the limit goes to the floor (%v)", limits)
	i := leaves(limits[2:], 20)
	assert.True(t, i >= 0 && i <= 80, "left the floor at round %d: %v", i, limits)
	assert.Equal(t, 24, slices.Max(limits[100:]), "back at Max between probes: %v", limits)
}

// SetPoint under Min 1, with a partner that serves 4 calls at once in
// 10 ms. An outage (every call times out at 10 s) takes its estimate of C
// to 0.02; then the partner answers again, slower (30 ms, no queue). At
// the floor the set point asks for the estimate + 1, 1.3 permits: no cut,
// so nothing was held back, but the limit is still 1, and the 10 ms no-load
// RTT was never refined (a queue shows against it). Two epochs at the
// floor that show the same queue now make 30 ms the no-load RTT.
func TestSetPointLeavesTheFloorAfterAnOutage(t *testing.T) {
	r := newFloorRun(t, func() adaptive.Algorithm { return &adaptive.SetPoint{} }, 1, 16)
	r.run(300, all, queued(10*time.Millisecond, 4), nil)
	r.run(10, all, queued(10*time.Second, 1000), context.DeadlineExceeded)
	limits := r.run(200, all, queued(30*time.Millisecond, 1000), nil)
	j := slices.Index(limits, 1)
	require.True(t, j >= 0 && j <= 5, "the outage took the limit to the floor (%v)", limits)
	i := leaves(limits[j:], 1)
	assert.True(t, i >= 0 && i <= 100, "left the floor at round %d: %v", i, limits)
	assert.Equal(t, 16, limits[len(limits)-1], "back at Max: %v", limits)
}

// SetPoint under Min 12, with a partner that serves 12 calls at once in
// 96 ms: the set point holds the limit at 13. Three rounds of timeouts
// take it to the floor, and the partner comes back 4 % slower (100 ms, no
// queue): within Tolerance (no queue shows), but above the no-load RTT's
// upper bound (no growth either), so the estimate stays at 12 × 96/100
// and the set point asks for 12.5 permits, the floor, for good. Two such
// epochs at the floor now make 100 ms the no-load RTT.
func TestSetPointLeavesTheFloorWhenTheRTTIsJustAboveTheNoLoadRTT(t *testing.T) {
	r := newFloorRun(t, func() adaptive.Algorithm { return &adaptive.SetPoint{} }, 12, 16)
	limits := r.run(300, all, queued(96*time.Millisecond, 12), nil)
	require.Equal(t, 13, limits[len(limits)-1], "the set point: %v", limits)
	r.run(3, all, queued(10*time.Second, 1000), context.DeadlineExceeded)
	limits = r.run(100, all, queued(100*time.Millisecond, 1000), nil)
	require.Equal(t, 12, limits[0], "the timeouts took the limit to the floor")
	i := leaves(limits, 12)
	assert.True(t, i >= 0 && i <= 30, "left the floor at round %d: %v", i, limits)
	assert.Equal(t, 16, limits[len(limits)-1], "back at Max: %v", limits)
}

// SetPoint under Min 12, with a partner that serves 12 calls at once in
// 96 ms: the set point holds the limit at 13 (1.06 × 12, rounded up to
// the estimate + 1), at 104 ms. Then the partner serves every call at once
// in 100 ms (within Tolerance of the 96 ms no-load RTT: no queue shows, but
// above its upper bound: no growth either) or in 104 ms (a queue shows,
// but no cut: the set point is where it was). Either way the estimate
// stays near 13 × 96 ms / RTT and Target × it rounds down to 13, for good:
// the limit was not at the floor, so the rule there did not fire. After 16
// epochs in a row at a limit that neither grows nor is cut (more after the
// probes that found the queue at 96 ms), the set point now probes one
// permit above; the RTT there does not rise, so it becomes the no-load
// RTT, and the limit grows.
func TestSetPointLeavesALimitWhoseRTTIsJustAboveTheNoLoadRTT(t *testing.T) {
	for _, rtt := range []time.Duration{100 * time.Millisecond, 104 * time.Millisecond} {
		var p *adaptive.SetPoint
		r := newFloorRun(t, func() adaptive.Algorithm { p = &adaptive.SetPoint{}; return p }, 12, 16)
		limits := r.run(300, all, queued(96*time.Millisecond, 12), nil)
		require.Equal(t, 13, limits[len(limits)-1], "the set point: %v", limits)
		limits = r.run(150, all, queued(rtt, 1000), nil)
		i := leaves(limits, 13)
		assert.True(t, i >= 0 && i <= 100, "%v: left 13 at round %d: %v", rtt, i, limits)
		assert.Equal(t, 16, limits[len(limits)-1], "%v: at Max: %v", rtt, limits)
		assert.InDelta(t, float64(rtt), p.NoLoadRTT(), 1e6, "%v: the no-load RTT", rtt)
	}
}

// The probe must not learn a queue as the no-load RTT. With Target 1.04,
// SetPoint holds a partner that serves 30 calls at once in 50 ms at 31
// permits, where the RTT (51.7 ms) sits in the same zone: within
// Tolerance, above the no-load RTT's upper bound. The probes above it see
// the RTT rise with the calls in flight (a queue), so they are undone and
// come rarer (after 16, 32, 64 epochs in a row); taking the RTT at the
// probe as the no-load RTT would raise the estimate every few epochs,
// into a queue without bound (up to Max, 64).
func TestSetPointDoesNotProbeIntoAQueue(t *testing.T) {
	var p *adaptive.SetPoint
	r := newFloorRun(t, func() adaptive.Algorithm { p = &adaptive.SetPoint{Target: 1.04}; return p }, 1, 64)
	limits := r.run(600, all, queued(50*time.Millisecond, 30), nil)
	last := limits[300:]
	assert.Equal(t, 31, limits[len(limits)-1], "the set point: %v", last)
	assert.LessOrEqual(t, slices.Max(last), 32, "probes of one permit: %v", last)
	above := 0
	for _, l := range last {
		if l > 31 {
			above++
		}
	}
	assert.LessOrEqual(t, above, 15, "rounds above the set point (probes): %v", last)
	assert.InDelta(t, 50e6, p.NoLoadRTT(), 0.5e6, "the no-load RTT")
}
