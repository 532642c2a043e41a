package adaptivesim

import (
	"slices"
	"time"
)

// Settle is how long after a change of capacity the limit may take to
// reach the band, and the steady state begins.
const Settle = 5 * time.Second

// Result is the measured figures of one run.
type Result struct {
	Name string
	// Converge is, per change of capacity (Scenario.Changes), the time
	// after which the limit, averaged over a second, stays within the band
	// around the capacity in force until the next change, counting only
	// the time the load is at or above the capacity; -1: never; 0 also
	// when no such time exists (nothing to converge to).
	Converge []time.Duration
	Goodput  float64 // calls answered within their deadline, per second
	// P99 is the 99th percentile latency of the admitted calls sent in
	// steady state (at least Settle after a change), a call given up
	// counting as its latency until then, relative to the partner's
	// unloaded p99 service time.
	P99 float64
	// RejectedUnderload counts calls rejected in steady state while the
	// load was below the capacity (none needed).
	RejectedUnderload int
	Rejected          int
	// AtFloor is the longest stretch of time the limit sat at 1.
	AtFloor time.Duration
}

// overloaded reports whether segment s offers at least the capacity's
// worth of load.
func overloaded(s Segment, mean time.Duration) bool {
	return s.Rate*mean.Seconds() >= float64(s.Capacity)*0.999
}

// lastChange is the time of the last change of capacity at or before t.
func (sc Scenario) lastChange(t time.Duration) time.Duration {
	last := time.Duration(0)
	for _, c := range sc.Changes {
		if c <= t {
			last = c
		}
	}
	return last
}

// Measure computes the figures of run on sc; band is the tolerance around
// C (0.15: ±15 %) and unloadedP99 the partner's p99 service time.
func Measure(sc Scenario, run Run, band float64, unloadedP99 time.Duration) Result {
	r := Result{Name: run.Name}
	mean := sc.Partner.Mean()
	var good int
	var steady []time.Duration
	for _, c := range run.Calls {
		seg := sc.segment(c.Sent)
		isSteady := c.Sent-sc.lastChange(c.Sent) >= Settle
		if c.Rejected {
			r.Rejected++
			if isSteady && !overloaded(seg, mean) {
				r.RejectedUnderload++
			}
			continue
		}
		if !c.TimedOut {
			good++
		}
		if isSteady {
			steady = append(steady, c.Latency)
		}
	}
	r.Goodput = float64(good) / sc.End().Seconds()
	if len(steady) > 0 {
		slices.Sort(steady)
		r.P99 = float64(steady[(len(steady)*99)/100]) / float64(unloadedP99)
	}
	avg := movingAverage(run.Limits, int(time.Second/sc.Trace))
	for k, from := range sc.Changes {
		to := sc.End()
		if k+1 < len(sc.Changes) {
			to = sc.Changes[k+1]
		}
		r.Converge = append(r.Converge, sc.converge(avg, from, to, band))
	}
	var run1 time.Duration
	for _, l := range run.Limits {
		if l <= 1 {
			run1 += sc.Trace
			r.AtFloor = max(r.AtFloor, run1)
		} else {
			run1 = 0
		}
	}
	return r
}

// converge returns how long after from the averaged limit avg stays within
// ±band of the capacity in force up to to, counting only overloaded time;
// -1 if it is out of the band at the last such point, 0 if there is none.
func (sc Scenario) converge(avg []float64, from, to time.Duration, band float64) time.Duration {
	mean := sc.Partner.Mean()
	lastOut := from - sc.Trace
	seen := false
	var lastSeen time.Duration
	for k, l := range avg {
		t := time.Duration(k) * sc.Trace
		if t < from || t >= to {
			continue
		}
		seg := sc.segment(t)
		if !overloaded(seg, mean) {
			continue
		}
		seen, lastSeen = true, t
		c := float64(seg.Capacity)
		if l < (1-band)*c || l > (1+band)*c {
			lastOut = t
		}
	}
	if !seen {
		return 0
	}
	if lastOut == lastSeen {
		return -1
	}
	return lastOut + sc.Trace - from
}

// movingAverage returns, for each point, the mean of the last n points.
func movingAverage(xs []int, n int) []float64 {
	out := make([]float64, len(xs))
	sum := 0
	for i, x := range xs {
		sum += x
		if i >= n {
			sum -= xs[i-n]
		}
		out[i] = float64(sum) / float64(min(i+1, n))
	}
	return out
}

// WorstConverge is the longest convergence of r; -1 if one never happened.
func (r Result) WorstConverge() time.Duration {
	w := time.Duration(0)
	for _, d := range r.Converge {
		if d < 0 {
			return -1
		}
		w = max(w, d)
	}
	return w
}
