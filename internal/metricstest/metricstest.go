// Package metricstest is what the tests of the metrics exporters share
// across modules (contrib/prometheus, contrib/otel, internal/fleetmetrics):
// a histogram the test fills from its own listeners, Prometheus's
// histogram_quantile over it, and a real Prometheus started by a test and
// queried with PromQL. It imports the standard library only.
package metricstest

import (
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"
)

// Histogram counts durations into the buckets of bounds as both exporters
// do (a duration equal to a bound falls in that bound's bucket), from the
// test's own listeners, to compare with what an exporter reports. It is
// safe for concurrent use.
type Histogram struct {
	mu     sync.Mutex
	bounds []time.Duration
	counts []uint64 // per bucket, the last +Inf
}

// NewHistogram returns an empty Histogram with the given upper bounds.
func NewHistogram(bounds []time.Duration) *Histogram {
	return &Histogram{bounds: slices.Clone(bounds), counts: make([]uint64, len(bounds)+1)}
}

// Add counts d.
func (h *Histogram) Add(d time.Duration) {
	i, _ := slices.BinarySearch(h.bounds, d)
	h.mu.Lock()
	h.counts[i]++
	h.mu.Unlock()
}

// Counts returns the count of each bucket, the last one +Inf (as OTel
// reports them).
func (h *Histogram) Counts() []uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.counts)
}

// Cumulative returns the total and the cumulative count of each bucket, the
// last one +Inf (as Prometheus reports them).
func (h *Histogram) Cumulative() (total uint64, cumulative []uint64) {
	cumulative = Cumulative(h.Counts())
	return cumulative[len(cumulative)-1], cumulative
}

// Cumulative returns the running sums of per-bucket counts.
func Cumulative(counts []uint64) []uint64 {
	out := make([]uint64, len(counts))
	var total uint64
	for i, n := range counts {
		total += n
		out[i] = total
	}
	return out
}

// Quantile is Prometheus's histogram_quantile(q) over cumulative bucket
// counts whose upper bounds (in seconds) are bounds, the last count being
// the +Inf bucket's: linear interpolation within the bucket that holds the
// rank, the highest bound for a rank in +Inf.
func Quantile(q float64, bounds []float64, cumulative []uint64) float64 {
	rank := q * float64(cumulative[len(cumulative)-1])
	i := slices.IndexFunc(cumulative, func(c uint64) bool { return float64(c) >= rank })
	if i == len(bounds) {
		return bounds[len(bounds)-1]
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = bounds[i-1], float64(cumulative[i-1])
	}
	return lower + (bounds[i]-lower)*(rank-below)/(float64(cumulative[i])-below)
}

// Seconds returns ds in seconds, as the exporters' bucket bounds.
func Seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// RequireTool returns the path of the program name (prometheus, promtool),
// skipping the test if it is not installed, or failing it if CI is set
// (make test installs them).
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed and CI is set: run `make prometheus`", name)
		}
		t.Skipf("%s is not installed (make prometheus)", name)
	}
	return path
}
