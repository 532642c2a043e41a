package adaptivesim

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Result is the measured figures of one run.
type Result struct {
	Name string
	// Converge is, per change of capacity (at the start and at each
	// change), the time until the limit (averaged over a second) stays
	// within ±15 % of the capacity until the load or the capacity changes
	// again; -1: never.
	Converge []time.Duration
	Goodput  float64 // calls answered within the deadline, per second
	// P99 is the 99th percentile latency of calls sent in steady state
	// (overload segments, at least Settle after a capacity change), a call
	// given up counting as the deadline, relative to the base latency.
	P99 float64
	// RejectedUnderload counts calls rejected while the load was below
	// the capacity (none needed).
	RejectedUnderload int
	Rejected          int
	// InBand is the share of steady-state time the limit is within ±15 %
	// of the capacity.
	InBand float64
}

// Settle is how long after a capacity change the steady state begins.
const Settle = 5 * time.Second

// changes returns the indexes of the segments where the capacity changes
// (the first one included).
func (sc Scenario) changes() []int {
	idx := []int{0}
	for i := 1; i < len(sc.Segments); i++ {
		if sc.Segments[i].Capacity != sc.Segments[i-1].Capacity {
			idx = append(idx, i)
		}
	}
	return idx
}

func (sc Scenario) segStart(i int) time.Duration {
	if i == 0 {
		return 0
	}
	return sc.Segments[i-1].Until
}

func overloaded(s Segment, base time.Duration) bool {
	return s.Rate*base.Seconds() > float64(s.Capacity)
}

// Measure computes the figures of run on sc.
func Measure(sc Scenario, run Run) Result {
	r := Result{Name: run.Name}
	var good int
	var steady []time.Duration
	for _, c := range run.Calls {
		seg := sc.segment(c.Sent)
		if c.Rejected {
			r.Rejected++
			if !overloaded(seg, sc.Base) {
				r.RejectedUnderload++
			}
			continue
		}
		if !c.TimedOut && c.Latency <= sc.Deadline {
			good++
		}
		if overloaded(seg, sc.Base) && c.Sent-sc.lastChange(c.Sent) >= Settle {
			steady = append(steady, c.Latency)
		}
	}
	r.Goodput = float64(good) / sc.End().Seconds()
	if len(steady) > 0 {
		slices.Sort(steady)
		r.P99 = float64(steady[(len(steady)*99)/100]) / float64(sc.Base)
	}
	r.InBand = sc.InBand(run.Limits)
	ch := sc.changes()
	for _, i := range ch {
		r.Converge = append(r.Converge, sc.converge(run.Limits, sc.segStart(i), sc.Segments[i].Until, sc.Segments[i].Capacity))
	}
	return r
}

// lastChange is the time of the last capacity change at or before t.
func (sc Scenario) lastChange(t time.Duration) time.Duration {
	last := time.Duration(0)
	for _, i := range sc.changes() {
		if s := sc.segStart(i); s <= t {
			last = s
		}
	}
	return last
}

// converge returns how long after from the limit, averaged over the
// preceding second (probing algorithms oscillate by design), stays within
// ±15 % of capacity up to to; -1 if it is out of the band at the last trace
// point before to.
func (sc Scenario) converge(limits []int, from, to time.Duration, capacity int) time.Duration {
	lo, hi := 0.85*float64(capacity), 1.15*float64(capacity)
	avg := movingAverage(limits, int(time.Second/sc.Trace))
	lastOut := from - sc.Trace
	seen := false
	var lastSeen time.Duration
	for k, l := range avg {
		t := time.Duration(k) * sc.Trace
		if t < from || t >= to || !overloaded(sc.segment(t), sc.Base) {
			continue
		}
		seen, lastSeen = true, t
		if l < lo || l > hi {
			lastOut = t
		}
	}
	if !seen || lastOut == lastSeen {
		return -1
	}
	return lastOut + sc.Trace - from
}

// InBand is the share of steady-state trace points (overload, at least
// Settle after a capacity change) where the limit itself is within ±15 %
// of the capacity.
func (sc Scenario) InBand(limits []int) float64 {
	in, n := 0, 0
	for k, l := range limits {
		t := time.Duration(k) * sc.Trace
		seg := sc.segment(t)
		if !overloaded(seg, sc.Base) || t-sc.lastChange(t) < Settle {
			continue
		}
		n++
		if c := float64(seg.Capacity); float64(l) >= 0.85*c && float64(l) <= 1.15*c {
			in++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(in) / float64(n)
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

// Table renders results as Markdown, goodput relative to best.
func Table(sc Scenario, results []Result, best Result) string {
	var b strings.Builder
	var heads []string
	for k, i := range sc.changes() {
		what := "start"
		if k > 0 {
			what = fmt.Sprintf("C %d→%d at %v", sc.Segments[i-1].Capacity, sc.Segments[i].Capacity, sc.segStart(i))
		}
		heads = append(heads, "converge after "+what)
	}
	fmt.Fprintf(&b, "| limiter | %s | limit within ±15 %% of C | goodput vs best static | p99 / base latency | rejected at load < C | rejected |\n", strings.Join(heads, " | "))
	fmt.Fprintf(&b, "|---|%s---:|---:|---:|---:|---:|\n", strings.Repeat("---:|", len(heads)))
	for _, r := range results {
		var conv []string
		for _, d := range r.Converge {
			if d < 0 {
				conv = append(conv, "never")
			} else {
				conv = append(conv, fmt.Sprintf("%.1f s", d.Seconds()))
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f %% | %.2fx | %.2fx | %d | %d |\n", r.Name, strings.Join(conv, " | "),
			100*r.InBand, r.Goodput/best.Goodput, r.P99, r.RejectedUnderload, r.Rejected)
	}
	return b.String()
}
