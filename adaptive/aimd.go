package adaptive

import (
	"math"
	"time"
)

// AIMD is the loss-based algorithm of Netflix concurrency-limits (AIMDLimit):
// additive increase while calls succeed and use at least half of the limit,
// multiplicative decrease when a call is dropped or takes longer than
// Timeout. It ignores latency below Timeout, so it lets a queue grow inside a
// slow partner until calls time out; use it when the partner signals
// overload itself (errors marked with Config.IsOverload).
//
// The zero AIMD is ready to use with the reference's defaults. Netflix's
// minimum (20) and maximum (200) limits are the controller's Config.Min and
// Config.Max here.
type AIMD struct {
	// BackoffRatio multiplies the limit on a drop. Zero means 0.9; values
	// outside [0.5, 1) are replaced by 0.9.
	BackoffRatio float64
	// Timeout is the RTT above which a sample counts as a drop. Zero means
	// 5 s.
	Timeout time.Duration
}

// Update implements Algorithm.
func (a *AIMD) Update(limit float64, s Sample) float64 {
	ratio := orDefault(a.BackoffRatio, 0.9)
	if !(ratio >= 0.5 && ratio < 1) {
		ratio = 0.9
	}
	if s.Dropped || s.RTT > orDefault(a.Timeout, 5*time.Second) {
		return math.Floor(limit * ratio)
	}
	if float64(s.InFlight)*2 >= limit {
		return limit + 1
	}
	return limit
}
