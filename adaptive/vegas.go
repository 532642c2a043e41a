package adaptive

import "math"

// Vegas is the delay-based algorithm of Netflix concurrency-limits
// (VegasLimit, after TCP Vegas). It keeps the lowest RTT seen as the
// no-load RTT and estimates the queue inside the partner as
// limit × (1 − noLoadRTT/RTT); with L = log10 of the limit (at least 1), it
// grows by Beta·L when the queue is below L, by L when it is below Alpha·L,
// and shrinks by L when it exceeds Beta·L or a call was dropped. Every
// ProbeMultiplier × limit samples (times a jitter in [0.5, 1)) it forgets
// the no-load RTT and takes the current RTT instead, so that a lasting
// change of the partner's base latency is learnt.
//
// Vegas settles Alpha·L to Beta·L calls above the partner's capacity and
// moves by L per sample, so it is slow to follow a large drop of capacity.
//
// The zero Vegas is ready to use with the reference's defaults. Netflix's
// maximum (1000) is the controller's Config.Max here.
type Vegas struct {
	// Alpha is the queue size, in multiples of log10(limit), below which
	// the limit grows. Zero means 3.
	Alpha float64
	// Beta is the queue size, in multiples of log10(limit), above which the
	// limit shrinks. Zero means 6.
	Beta float64
	// Smoothing is the weight of the new limit against the old one, in
	// (0, 1]. Zero means 1 (no smoothing).
	Smoothing float64
	// ProbeMultiplier sets how often the no-load RTT is re-measured: every
	// ProbeMultiplier × limit samples, times a jitter. Zero means 30.
	ProbeMultiplier int

	noLoad     float64 // lowest RTT in ns since the last probe; 0: none yet
	probeCount int
	jitter     float64 // in [0.5, 1); 0: not drawn yet
	rng        uint64  // xorshift state for the jitter, deterministic
}

// Update implements Algorithm.
func (v *Vegas) Update(limit float64, s Sample) float64 {
	rtt := rttNanos(s)
	if v.jitter == 0 {
		v.nextJitter()
	}
	v.probeCount++
	if v.jitter*float64(orDefault(v.ProbeMultiplier, 30))*limit <= float64(v.probeCount) {
		v.nextJitter()
		v.probeCount = 0
		v.noLoad = rtt
		return limit
	}
	if v.noLoad == 0 || rtt < v.noLoad {
		v.noLoad = rtt
		return limit
	}
	queue := math.Ceil(limit * (1 - v.noLoad/rtt))
	l := log10Root(limit)
	next := limit
	switch {
	case s.Dropped:
		next = limit - l
	case float64(s.InFlight)*2 < limit:
		return limit // far from the limit: do not drift up
	case queue <= l:
		next = limit + orDefault(v.Beta, 6)*l
	case queue < orDefault(v.Alpha, 3)*l:
		next = limit + l
	case queue > orDefault(v.Beta, 6)*l:
		next = limit - l
	default:
		return limit
	}
	next = math.Max(1, next)
	sm := orDefault(v.Smoothing, 1)
	if !(sm > 0 && sm <= 1) {
		sm = 1
	}
	return (1-sm)*limit + sm*next
}

// nextJitter draws the probe jitter in [0.5, 1) from a xorshift sequence
// with a fixed seed, so that runs are reproducible.
func (v *Vegas) nextJitter() {
	if v.rng == 0 {
		v.rng = 0x9e3779b97f4a7c15
	}
	v.rng ^= v.rng << 13
	v.rng ^= v.rng >> 7
	v.rng ^= v.rng << 17
	v.jitter = 0.5 + 0.5*float64(v.rng>>11)/(1<<53)
}
