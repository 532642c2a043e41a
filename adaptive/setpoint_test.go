package adaptive_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead/adaptive"
)

// fluidRate is fluid with the windows' durations: the partner serves
// min(limit, capacity) calls at once, so a window of 50 calls lasts
// 50 × RTT / limit (Little's law, every permit in use). It returns the
// last limit and the lowest and highest limits of the last span windows.
func fluidRate(c adaptive.Algorithm, limit float64, capacity int, base time.Duration, dev float64, windows, span int) (last, lo, hi float64) {
	lo, hi = limit, limit
	for i := range windows {
		held := float64(int(limit))
		rtt := time.Duration(float64(base) * max(1, held/float64(capacity)))
		elapsed := time.Duration(50 * float64(rtt) / held)
		limit = max(1, c.Update(limit, adaptive.Sample{RTT: rtt, RTTDev: time.Duration(dev * float64(rtt)), N: 50,
			InFlight: int(held), Elapsed: elapsed}))
		if i == windows-span {
			lo, hi = limit, limit
		}
		lo, hi = min(lo, limit), max(hi, limit)
	}
	return limit, lo, hi
}

// Once it knows C, SetPoint holds Target × C (1.06 × 30 = 31.8, the no-load
// RTT's upper bound a little above) and does not probe: over the last 100
// windows the limit stays within one permit, where Capacity's probes take
// it several permits above C.
func TestSetPointHoldsTargetTimesTheCapacity(t *testing.T) {
	for _, start := range []float64{6, 150} {
		p := &adaptive.SetPoint{}
		_, lo, hi := fluidRate(p, start, 30, 50*ms, 0.1, 400, 100)
		assert.GreaterOrEqual(t, lo, 31.0, "from %v", start)
		assert.LessOrEqual(t, hi, 33.0, "from %v", start)
		assert.InDelta(t, 30, p.EstimatedCapacity(), 1, "from %v", start)
	}
	_, lo, hi := fluidRate(&adaptive.Capacity{}, 6, 30, 50*ms, 0.1, 400, 100)
	assert.Greater(t, hi-lo, 2.0, "Capacity probes above C")
}

func TestSetPointFollowsACapacityThatDropsAndRecovers(t *testing.T) {
	p := &adaptive.SetPoint{}
	limit, _, _ := fluidRate(p, 30, 30, 50*ms, 0.1, 300, 1)
	limit, lo, hi := fluidRate(p, limit, 10, 50*ms, 0.1, 200, 50)
	assert.GreaterOrEqual(t, lo, 10.0, "after the drop to 10")
	assert.LessOrEqual(t, hi, 12.0, "after the drop to 10")
	_, lo, hi = fluidRate(p, limit, 30, 50*ms, 0.1, 200, 50)
	assert.GreaterOrEqual(t, lo, 31.0, "after the recovery to 30")
	assert.LessOrEqual(t, hi, 33.0, "after the recovery to 30")
}

// Below a reached limit nothing is lowered, and with no queue the limit
// leaves room for the calls in flight to double.
func TestSetPointNeverLowersALimitThatIsNotReached(t *testing.T) {
	p := &adaptive.SetPoint{}
	limit, _, _ := fluidRate(p, 6, 30, 50*ms, 0.1, 300, 1)
	require.InDelta(t, 32, limit, 1)
	for range 100 { // half the limit in use, no queue: a load below C
		next := p.Update(limit, adaptive.Sample{RTT: 50 * ms, RTTDev: 5 * ms, N: 50, InFlight: 20, Elapsed: 125 * ms})
		assert.GreaterOrEqual(t, next, limit, "a load below C cut the limit")
		limit = next
	}
	assert.GreaterOrEqual(t, limit, 40.0, "room for twice the 20 calls in flight")
}

// The floor rule: when the partner's base latency doubles (C still 30), the
// set point's cuts do not lower the RTT; they are undone, and the limit
// comes back to Target × C with the new no-load RTT.
func TestSetPointUndoesCutsThatDoNotLowerTheRTT(t *testing.T) {
	p := &adaptive.SetPoint{}
	limit, _, _ := fluidRate(p, 6, 30, 50*ms, 0.1, 300, 1)
	lowest := limit
	for range 300 {
		limit, _, _ = fluidRate(p, limit, 30, 100*ms, 0.1, 1, 1)
		lowest = min(lowest, limit)
	}
	assert.GreaterOrEqual(t, lowest, 13.0, "the cuts went on past one halving")
	assert.GreaterOrEqual(t, limit, 30.0, "the cuts were not undone")
	assert.LessOrEqual(t, limit, 34.0)
}

// Per-call samples carry an Elapsed (the gap since the previous sample)
// since Sample.PerCall exists; SetPoint and Capacity take no rate from
// them, so they decide as they did when a per-call sample had none: the
// same samples with and without Elapsed give the same limits.
func TestSetPointAndCapacityTakeNoRateFromPerCallSamples(t *testing.T) {
	for _, name := range []string{adaptive.NameSetPoint, adaptive.NameCapacity} {
		newAlg, _ := adaptive.ByName(name)
		timed, untimed := newAlg(), newAlg()
		rng := rand.New(rand.NewPCG(1, 2))
		l1, l2 := 6.0, 6.0
		for i := range 20000 {
			level := 1 + rng.IntN(int(l1))
			rtt := time.Duration(float64(50*ms) * max(1, float64(level)/30) * (0.8 + 0.4*rng.Float64()))
			s := adaptive.Sample{RTT: rtt, N: 1, InFlight: level, Dropped: i%500 == 0, Drops: min(1, 1-min(1, i%500))}
			l2 = max(1, untimed.Update(l2, s))
			s.Elapsed, s.PerCall = time.Duration(float64(rtt)/max(1, float64(level))), true
			l1 = max(1, timed.Update(l1, s))
			require.Equal(t, l2, l1, "%s, sample %d", name, i)
		}
	}
}
