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
	matched     bool // an RTT was matched to a grant (not the call's own)
	// callInFlight is the in-flight count of the last call added (see
	// Sample.InFlight), for Window.PerCall.
	callInFlight int
	// at is when the in-flight count last changed (or the window began);
	// profile[k] is the time spent with k calls in flight up to at. The
	// slice is handed over with the sample, so each window has its own.
	at      time.Duration
	profile []time.Duration
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

// track adds the time since the last change of the in-flight count to
// level, the count until now. Call it before the count changes and before
// the window is summed up.
func (w *window) track(now time.Duration, level int) {
	d := now - w.at
	if d <= 0 {
		return
	}
	if level >= len(w.profile) {
		w.profile = append(w.profile, make([]time.Duration, level+1-len(w.profile))...)
	}
	w.profile[level] += d
	w.at = now
}

// rtt is the window's mean RTT (at least 1 ns).
func (w *window) rtt() time.Duration {
	return time.Duration(max(min(w.sum/float64(max(w.n, 1)), math.MaxInt64), 1))
}

// dev is the standard deviation of the window's RTTs: 0 below two calls,
// and when an RTT was matched to a grant (the matched RTTs keep the mean
// but not the spread; see grants).
func (w *window) dev() time.Duration {
	if w.n < 2 || w.matched {
		return 0
	}
	mean := w.sum / float64(w.n)
	v := (w.sumSq - float64(w.n)*mean*mean) / float64(w.n-1)
	return time.Duration(min(math.Sqrt(max(v, 0)), math.MaxInt64))
}

// sample sums the window up at now, the finish that closes it, with level
// calls in flight until then.
func (w *window) sample(now time.Duration, level int) Sample {
	w.track(now, level)
	return Sample{RTT: w.rtt(), RTTDev: w.dev(), N: w.n, InFlight: max(1, w.maxInFlight), Dropped: w.drops > 0, Drops: w.drops,
		Duration: max(0, now-w.start), InFlightTime: w.profile}
}

// callSample is the sample of the one call just added (Window.PerCall):
// no duration and no in-flight profile.
func (w *window) callSample() Sample {
	return Sample{RTT: w.rtt(), N: w.n, InFlight: max(1, w.callInFlight), Dropped: w.drops > 0, Drops: w.drops}
}

// reset starts a new window at now with inFlight calls in flight. The new
// profile is sized like the last one, so that it rarely grows.
func (w *window) reset(now time.Duration, inFlight int) {
	size := len(w.profile)
	*w = window{start: now, at: now, maxInFlight: inFlight}
	if size > 0 {
		w.profile = make([]time.Duration, size)
	}
}
