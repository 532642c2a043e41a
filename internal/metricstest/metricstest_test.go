package metricstest

import (
	"testing"
	"time"
)

// The quantile of the tally, as histogram_quantile computes it: linear
// within the bucket holding the rank, the highest bound in +Inf.
func TestQuantileInterpolatesAsHistogramQuantile(t *testing.T) {
	h := NewHistogram([]time.Duration{time.Millisecond, 2 * time.Millisecond})
	for _, d := range []time.Duration{0, time.Millisecond, 1500 * time.Microsecond, 2 * time.Millisecond, time.Second} {
		h.Add(d)
	}
	total, cum := h.Cumulative()
	if total != 5 || cum[0] != 2 || cum[1] != 4 || cum[2] != 5 {
		t.Fatalf("total %d cumulative %v", total, cum)
	}
	b := Seconds([]time.Duration{time.Millisecond, 2 * time.Millisecond})
	for q, want := range map[float64]float64{0.2: 0.0005, 0.6: 0.0015, 0.99: 0.002} {
		if got := Quantile(q, b, cum); got < want-1e-12 || got > want+1e-12 {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
}
