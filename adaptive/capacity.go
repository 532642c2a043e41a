package adaptive

import "math"

// Capacity is this package's own algorithm. It estimates the partner's
// capacity with Little's law and keeps the limit at or just above it:
//
//   - The no-load RTT is the average RTT of windows without queueing (RTT at
//     most Tolerance × the no-load RTT), followed with weight 0.1. Windows
//     with queueing pull it up with weight 0.001 (by at most 0.1 % per
//     window), or 0.01 (at most 1 %) when the controller kept the limit
//     above the last cut (at its floor, where no cut can help), so that a
//     lasting rise of the partner's base latency is learnt (in a few
//     hundred windows for a tenfold rise) rather than never. The first sample
//     is skipped: its calls started together and the fastest finish first,
//     so its mean is biased low.
//   - With queueing, the partner serves about InFlight × noLoad/RTT calls
//     at once (Little's law): the limit drops to that estimate less half a
//     Growth step (the estimate lags and errs high), by at most half per
//     sample to filter outliers, and is remembered as the capacity.
//   - Without queueing, when at least 90 % of the limit was used: below 90 %
//     of the remembered capacity, or when there is none, the limit grows by
//     FastGrowth; near it, by Growth (at least one permit), and the next
//     sample only observes the effect. A limit that went one and a half
//     careful steps past the remembered capacity without queueing forgets
//     it (the partner grew). With fewer calls in flight (a lull) the limit
//     goes back to the remembered capacity if it was above it (a probe that
//     cannot be checked), and otherwise holds, so a lull does not inflate
//     it.
//   - A dropped call multiplies the limit by Backoff.
//
// On a partner that serves C calls at once and queues the rest, it settles
// between C and C × (1+Growth) and follows a change of C within a few
// windows (bench/adaptivesim measures it). Tolerance must exceed the
// window-to-window noise of the partner's RTT.
//
// The zero Capacity is ready to use with its defaults.
type Capacity struct {
	// Growth is the relative growth per sample near the remembered
	// capacity. Zero means 0.1; values outside (0, 1] are replaced by 0.1.
	Growth float64
	// FastGrowth is the relative growth per sample far below it. Zero means
	// 0.25; values outside (0, 1] are replaced by 0.25.
	FastGrowth float64
	// Tolerance is the ratio RTT/no-load RTT up to which a window counts as
	// without queueing. Zero means 1.05; values not above 1 are replaced
	// by 1.05.
	Tolerance float64
	// Backoff multiplies the limit when a call was dropped (1: drops are
	// ignored). Zero means 0.9; values outside (0, 1] are replaced by 0.9.
	Backoff float64

	noLoad   float64 // ns; 0: not measured yet
	capacity float64 // the last estimate under queueing; 0: none
	lastNext float64 // what the last Update returned
	observe  bool    // the last sample grew the limit near capacity
	started  bool    // the first sample was skipped
}

// NoLoadRTT returns the current estimate of the partner's RTT without
// queueing, in nanoseconds (0 before it is measured).
func (c *Capacity) NoLoadRTT() float64 { return c.noLoad }

// Update implements Algorithm.
func (c *Capacity) Update(limit float64, s Sample) float64 {
	if !c.started {
		c.started = true
		return limit
	}
	rtt := rttNanos(s)
	if c.noLoad == 0 {
		c.noLoad = rtt
	}
	queued := rtt > param(c.Tolerance, 1.05, 1, math.Inf(1))*c.noLoad
	switch {
	case !queued && c.capacity > 0 && float64(s.InFlight) > c.capacity:
		// probing above the capacity: a little queueing may hide below the
		// tolerance, so learn from it slowly
		c.noLoad += (rtt - c.noLoad) * 0.01
	case !queued:
		c.noLoad += (rtt - c.noLoad) * 0.1
	case limit > c.lastNext+0.5:
		// Queueing, and the last cut was not applied (the controller holds
		// the limit at its floor): no cut can help, so the partner's base
		// latency must have risen.
		c.noLoad += math.Min(rtt-c.noLoad, c.noLoad) * 0.01
	default:
		c.noLoad += math.Min(rtt-c.noLoad, c.noLoad) * 0.001
	}
	next := limit
	observing := c.observe
	c.observe = false
	switch {
	case queued:
		estimate := float64(s.InFlight) * c.noLoad / rtt * (1 - param(c.Growth, 0.1, 0, 1)/2)
		next = math.Min(limit, math.Max(limit/2, estimate))
		c.capacity = next
	case observing:
		// the sample after a careful step: hold, to see its effect
	case float64(s.InFlight) < 0.9*math.Floor(limit):
		// a lull: a probe above the remembered capacity cannot be checked,
		// so fall back to that capacity; otherwise hold
		if c.capacity > 0 {
			next = math.Min(limit, c.capacity)
		}
	case c.capacity > 0 && limit-c.capacity > 1.5*math.Max(1, c.capacity*param(c.Growth, 0.1, 0, 1)):
		c.capacity = 0 // past the old capacity without queueing: it grew
		fallthrough
	case c.capacity == 0 || limit < 0.9*c.capacity:
		next = limit * (1 + param(c.FastGrowth, 0.25, 0, 1))
		if c.capacity > 0 {
			next = math.Min(next, c.capacity)
		}
		next = math.Max(next, limit+1)
	default:
		next = limit + math.Max(1, limit*param(c.Growth, 0.1, 0, 1))
		c.observe = true
	}
	if s.Dropped {
		next = math.Min(next, limit*param(c.Backoff, 0.9, 0, 1))
	}
	c.lastNext = next
	return next
}

// param returns v, or def when v is zero or outside (lo, hi] (NaN
// included).
func param(v, def, lo, hi float64) float64 {
	if v == 0 || !(v > lo && v <= hi) {
		return def
	}
	return v
}
