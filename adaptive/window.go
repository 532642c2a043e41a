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
	minRTT      time.Duration // shortest RTT; 0: none
	maxInFlight int
	dropped     bool
}

// add records the RTT of a finished call.
func (w *window) add(rtt time.Duration) {
	rtt = max(rtt, 1)
	w.n++
	w.sum += float64(rtt)
	if w.minRTT == 0 || rtt < w.minRTT {
		w.minRTT = rtt
	}
}

// rtt is the window's mean RTT (at least 1 ns).
func (w *window) rtt() time.Duration {
	return time.Duration(max(min(w.sum/float64(max(w.n, 1)), math.MaxInt64), 1))
}

// reset starts a new window at now with inFlight calls in flight.
func (w *window) reset(now time.Duration, inFlight int) {
	*w = window{start: now, maxInFlight: inFlight}
}
