package adaptive_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

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

func TestCapacitySkipsFirstSampleThenGrowsFastWithoutQueue(t *testing.T) {
	c := &adaptive.Capacity{}
	assert.Equal(t, 20.0, c.Update(20, sample(100*ms, 20)))
	assert.Equal(t, 25.0, c.Update(20, sample(100*ms, 20)))
	assert.Equal(t, 25.0, c.Update(25, sample(100*ms, 10)), "a lull holds the limit")
}

func TestCapacityCutsToLittlesLawEstimateUnderQueueing(t *testing.T) {
	c := &adaptive.Capacity{}
	c.Update(100, sample(100*ms, 100))
	c.Update(100, sample(100*ms, 100))
	// 120 in flight at 1.2× the no-load RTT: the partner serves 100; minus
	// half a Growth step: 95.
	got := c.Update(120, sample(120*ms, 120))
	assert.InDelta(t, 95, got, 0.2)
	// Near the remembered capacity it grows carefully, then observes.
	next := c.Update(got, sample(100*ms, int(got)))
	assert.InDelta(t, got*1.1, next, 1e-9)
	assert.Equal(t, next, c.Update(next, sample(100*ms, int(next))))
}

func TestCapacityBacksOffOnDrop(t *testing.T) {
	c := &adaptive.Capacity{}
	c.Update(50, sample(100*ms, 50))
	c.Update(50, sample(100*ms, 50))
	assert.Equal(t, 45.0, c.Update(50, adaptive.Sample{RTT: 100 * ms, InFlight: 10, Dropped: true}))
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
