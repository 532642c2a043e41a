package adaptive

import (
	"math"
	"time"
)

// window accumulates what the calls of one window did. All fields are
// guarded by Bulkhead.mu; times are offsets from Bulkhead.epoch. Every
// finished call adds its RTT: measured for typed calls (Call), matched with
// the oldest grant for plain ones (see grants).
type window struct {
	start       time.Duration
	n           int           // calls finished
	sum         float64       // of RTTs in ns (a float: huge RTTs must not overflow)
	sumSq       float64       // of squared RTTs in ns²
	minRTT      time.Duration // shortest RTT; 0: none
	maxInFlight int
	drops       int  // calls that ended in overload
	matched     bool // an RTT was matched to a grant, not measured (see grants)
	// callInFlight is the in-flight count of the last call added (see
	// Sample.InFlight), for Window.PerCall.
	callInFlight int
}

// add records the RTT of a finished call.
func (w *window) add(rtt time.Duration) {
	rtt = max(rtt, 1)
	w.n++
	f := float64(rtt)
	w.sum += f
	w.sumSq += f * f
	if w.minRTT == 0 || rtt < w.minRTT {
		w.minRTT = rtt
	}
}

// rtt is the window's mean RTT (at least 1 ns).
func (w *window) rtt() time.Duration {
	return time.Duration(max(min(w.sum/float64(max(w.n, 1)), math.MaxInt64), 1))
}

// dev is the standard deviation of the window's RTTs: 0 below two calls,
// and 0 (unknown, see Sample.Matched) when an RTT was matched to a grant.
func (w *window) dev() time.Duration {
	if w.n < 2 || w.matched {
		return 0
	}
	mean := w.sum / float64(w.n)
	v := (w.sumSq - float64(w.n)*mean*mean) / float64(w.n-1)
	return time.Duration(min(math.Sqrt(max(v, 0)), math.MaxInt64))
}

// sample sums the window up.
func (w *window) sample() Sample {
	return Sample{RTT: w.rtt(), RTTDev: w.dev(), N: w.n, InFlight: max(1, w.maxInFlight), Dropped: w.drops > 0, Drops: w.drops, Matched: w.matched}
}

// reset starts a new window at now with inFlight calls in flight.
func (w *window) reset(now time.Duration, inFlight int) {
	*w = window{start: now, maxInFlight: inFlight}
}
