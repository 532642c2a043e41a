package adaptive_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
)

// plainRun drives the plain bulkhead.Bulkhead methods with calls arriving
// every gap, each taking rtt(i), and returns, per window, the controller's
// RTT and the true mean RTT of the calls that finished in that window.
func plainRun(t *testing.T, calls int, gap time.Duration, rtt func(i int) time.Duration) (got, want []time.Duration) {
	t.Helper()
	var finished []time.Duration // true RTTs in finish order
	mark := 0
	rec := &recorder{}
	rec.onSample = func(s adaptive.Sample) {
		var sum time.Duration
		for _, d := range finished[mark:] {
			sum += d
		}
		got = append(got, s.RTT)
		want = append(want, sum/time.Duration(len(finished)-mark))
		mark = len(finished)
	}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1000},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return rec }, Max: 1000})
	type end struct {
		at  time.Duration
		rtt time.Duration
	}
	var ends []end
	now := time.Duration(0)
	for i := range calls {
		now += gap
		// finish the calls due before this arrival, in time order
		for len(ends) > 0 && ends[0].at <= now {
			clock.AdvanceTo(epoch.Add(ends[0].at))
			finished = append(finished, ends[0].rtt)
			b.FinishCall()
			ends = ends[1:]
		}
		clock.AdvanceTo(epoch.Add(now))
		require.NoError(t, b.AcquirePermissionAsync().Err())
		d := rtt(i)
		e := end{now + d, d}
		k, _ := slices.BinarySearchFunc(ends, e, func(a, b end) int { return int(a.at - b.at) })
		ends = slices.Insert(ends, k, e)
	}
	for _, e := range ends {
		clock.AdvanceTo(epoch.Add(e.at))
		finished = append(finished, e.rtt)
		b.FinishCall()
	}
	return got, want
}

type recorder struct{ onSample func(adaptive.Sample) }

func (r *recorder) Update(limit float64, s adaptive.Sample) float64 {
	r.onSample(s)
	return limit
}

func relErrors(got, want []time.Duration) (mean, worst float64) {
	for i := range got {
		e := math.Abs(float64(got[i]-want[i])) / float64(want[i])
		mean += e
		worst = max(worst, e)
	}
	return mean / float64(len(got)), worst
}

func TestPlainRTTEstimateIsExactWhenCallsFinishInOrder(t *testing.T) {
	got, want := plainRun(t, 5000, ms, func(int) time.Duration { return 100 * ms })
	require.NotEmpty(t, got)
	assert.Equal(t, want, got)
}

func TestPlainRTTEstimateWithReorderedCalls(t *testing.T) {
	// 1000 calls/s, RTT uniform in [50, 150] ms: about 100 in flight and
	// calls overtake each other all the time.
	rng := rand.New(rand.NewPCG(1, 2))
	got, want := plainRun(t, 20000, ms, func(int) time.Duration {
		return time.Duration(50+rng.IntN(101)) * ms
	})
	require.Greater(t, len(got), 50)
	// The first window, from idle, is off: its first finishers are the
	// fastest calls, matched with the oldest grants (22 % here).
	first, _ := relErrors(got[:1], want[:1])
	mean, worst := relErrors(got[1:], want[1:])
	t.Logf("%d windows: first %.1f %%; then mean relative error %.2f %%, worst %.2f %%", len(got), 100*first, 100*mean, 100*worst)
	assert.Less(t, mean, 0.01)
	assert.Less(t, worst, 0.05)
}

// Matching keeps a window's mean RTT (the tests above) but not the spread
// of its calls' RTTs: a finish matched to the oldest grant measures how
// long the oldest call has been in flight, which varies far less than
// single RTTs do (here a ninth as much). So a plain window says its RTTs
// were matched and leaves RTTDev unknown (0), instead of reporting a
// spread that made Capacity's evidence overconfident.
func TestPlainWindowsAreMatchedAndLeaveTheSpreadUnknown(t *testing.T) {
	var samples []adaptive.Sample
	rec := &recorder{onSample: func(s adaptive.Sample) { samples = append(samples, s) }}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1000},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return rec }, Max: 1000})
	rng := rand.New(rand.NewPCG(3, 4))
	var ends []time.Duration
	var matched, truth []float64 // per-call RTTs, as matched and as they were
	var grants []time.Duration
	now := time.Duration(0)
	for range 5000 {
		now += ms
		for len(ends) > 0 && ends[0] <= now {
			clock.AdvanceTo(epoch.Add(ends[0]))
			matched = append(matched, float64(ends[0]-grants[0]))
			grants = grants[1:]
			b.FinishCall()
			ends = ends[1:]
		}
		clock.AdvanceTo(epoch.Add(now))
		require.NoError(t, b.AcquirePermissionAsync().Err())
		grants = append(grants, now)
		d := time.Duration(20+rng.IntN(181)) * ms
		truth = append(truth, float64(d))
		k, _ := slices.BinarySearch(ends, now+d)
		ends = slices.Insert(ends, k, now+d)
	}
	for _, e := range ends {
		clock.AdvanceTo(epoch.Add(e))
		b.FinishCall()
	}
	require.NotEmpty(t, samples)
	for _, s := range samples {
		assert.True(t, s.Matched)
		assert.Zero(t, s.RTTDev)
	}
	sd := func(xs []float64) float64 {
		m := 0.0
		for _, x := range xs {
			m += x
		}
		m /= float64(len(xs))
		v := 0.0
		for _, x := range xs {
			v += (x - m) * (x - m)
		}
		return math.Sqrt(v / float64(len(xs)))
	}
	t.Logf("spread of the matched RTTs: %.0f %% of the true spread", 100*sd(matched)/sd(truth))
	assert.Less(t, sd(matched), sd(truth)/2, "matching no longer understates the spread: RTTDev could be reported")
}
