package main

import (
	"math"
	"sync/atomic"
	"time"
)

// histogram counts latencies in log-spaced buckets (8 per doubling, from
// 1µs): a percentile is exact to within 9 %. It is safe for concurrent use.
type histogram struct {
	buckets [histBuckets]atomic.Int64
	count   atomic.Int64
}

const histBuckets = 8 * 36 // up to 2^36 µs

func bucketOf(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if us <= 1 {
		return 0
	}
	return min(int(math.Log2(us)*8)+1, histBuckets-1)
}

// bucketTop is the largest latency counted in bucket i.
func bucketTop(i int) time.Duration {
	return time.Duration(math.Exp2(float64(i)/8) * float64(time.Microsecond))
}

func (h *histogram) record(d time.Duration) {
	h.buckets[bucketOf(d)].Add(1)
	h.count.Add(1)
}

// quantile returns the q-quantile (0 < q <= 1), or 0 when empty.
func (h *histogram) quantile(q float64) time.Duration {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	var seen int64
	for i := range h.buckets {
		seen += h.buckets[i].Load()
		if seen >= rank {
			return bucketTop(i)
		}
	}
	return bucketTop(histBuckets - 1)
}

// class gathers the counters of one group of partners (walmart, or the
// healthy ones together) for a run.
type class struct {
	permitted atomic.Int64 // calls granted a permit
	queued    atomic.Int64 // calls that had to wait for their permit
	rejected  atomic.Int64 // calls refused by the bulkhead
	latency   histogram    // document sent -> partner answered, for permitted calls
}

// series is one class's behaviour over time, in bins of equal width.
type series struct {
	latency  []histogram
	rejected []atomic.Int64
}

func newSeries(bins int) *series {
	return &series{latency: make([]histogram, bins), rejected: make([]atomic.Int64, bins)}
}

// timeline maps instants of a run to bins.
type timeline struct {
	start time.Time
	bin   time.Duration
	bins  int
}

func (t timeline) index(at time.Time) (int, bool) {
	i := int(at.Sub(t.start) / t.bin)
	return i, i >= 0 && i < t.bins
}
