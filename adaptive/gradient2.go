package adaptive

import "math"

// Gradient2 is the delay-based algorithm of Netflix concurrency-limits
// (Gradient2Limit). It compares the sample RTT with a long-term exponential
// average of RTTs: gradient = clamp(RTTTolerance × long/short, 0.5, 1), and
// moves the limit towards limit × gradient + QueueSize with weight
// Smoothing. When the long average is more than twice the sample (latency
// came back down after a long overload) it decays the average by 5 %. It
// does not change the limit while fewer than half of the permits are used.
//
// Gradient2 settles where the RTT is RTTTolerance times the long-term
// average, that is about RTTTolerance × capacity + QueueSize calls, and the
// long-term average drifts up during a long overload.
//
// The zero Gradient2 is ready to use with the reference's defaults.
// Netflix's minimum (20) and maximum (200) limits are the controller's
// Config.Min and Config.Max here.
type Gradient2 struct {
	// QueueSize is how much the limit may grow per sample while latency is
	// low, before smoothing. Zero means 4.
	QueueSize float64
	// Smoothing is the weight of the new limit against the old one, in
	// (0, 1]. Zero means 0.2.
	Smoothing float64
	// RTTTolerance is how much the RTT may exceed the long-term average
	// before the limit shrinks: 1.5 tolerates 50 %. Zero means 1.5; values
	// below 1 are replaced by 1.5.
	RTTTolerance float64
	// LongWindow is the length, in samples, of the long-term exponential
	// average. Zero means 600.
	LongWindow int

	long  float64 // long-term average RTT in ns
	count int     // samples seen, up to the warm-up of 10
}

// gradient2Warmup is the number of first samples the long-term average
// takes as a plain mean, as the reference does.
const gradient2Warmup = 10

// Update implements Algorithm.
func (g *Gradient2) Update(limit float64, s Sample) float64 {
	short := rttNanos(s)
	if g.count < gradient2Warmup {
		g.count++
		g.long += (short - g.long) / float64(g.count)
	} else {
		f := 2 / float64(orDefault(g.LongWindow, 600)+1)
		g.long = g.long*(1-f) + short*f
	}
	if g.long/short > 2 {
		g.long *= 0.95
	}
	if float64(s.InFlight) < limit/2 {
		return limit
	}
	tol := orDefault(g.RTTTolerance, 1.5)
	if !(tol >= 1) {
		tol = 1.5
	}
	sm := orDefault(g.Smoothing, 0.2)
	if !(sm > 0 && sm <= 1) {
		sm = 0.2
	}
	gradient := math.Max(0.5, math.Min(1, tol*g.long/short))
	next := limit*gradient + orDefault(g.QueueSize, 4)
	return limit*(1-sm) + next*sm
}
