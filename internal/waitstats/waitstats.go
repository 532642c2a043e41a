// Package waitstats accumulates, per bulkhead name, what the metrics
// exporters report from events: a histogram of the time calls waited for a
// permit (granted and rejected apart) and the rejections by reason. It is
// shared by contrib/prometheus (which reads it at scrape time) and the pool
// collectors; it imports nothing but the root package.
//
// Recording takes no lock and allocates nothing once a name has its entry:
// one lock-free map lookup, a binary search over the bucket bounds and two
// atomic adds.
package waitstats

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// DefaultBuckets are the upper bounds of the wait histogram, from 100 µs
// (a queue handing a permit on at once) to 10 s (the longest waits users
// configure).
var DefaultBuckets = []time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// CheckBuckets reports what is wrong with bounds, or nil: they must be
// positive and strictly increasing, and there must be at least one.
func CheckBuckets(bounds []time.Duration) error {
	if len(bounds) == 0 {
		return errString("no bucket bounds")
	}
	for i, b := range bounds {
		if b <= 0 {
			return errString("bucket bound " + b.String() + " is not positive")
		}
		if i > 0 && b <= bounds[i-1] {
			return errString("bucket bounds are not strictly increasing (" + bounds[i-1].String() + ", then " + b.String() + ")")
		}
	}
	return nil
}

type errString string

func (e errString) Error() string { return string(e) }

// Histogram counts durations into buckets. Counts are per bucket (not
// cumulative); the last counts the durations above every bound.
type Histogram struct {
	counts []atomic.Uint64
	sum    atomic.Int64 // nanoseconds
}

func newHistogram(n int) Histogram { return Histogram{counts: make([]atomic.Uint64, n+1)} }

func (h *Histogram) observe(bounds []time.Duration, d time.Duration) {
	i, _ := slices.BinarySearch(bounds, d) // first bound >= d: the bucket le=bound holds d
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// Snapshot returns the count, the sum and the cumulative count of each
// bound (in the order of the bounds). It reads the buckets one by one while
// others may be counted: count is the sum of what it read, so the three
// always agree with each other.
func (h *Histogram) Snapshot() (count uint64, sum time.Duration, cumulative []uint64) {
	if len(h.counts) == 0 { // the zero Histogram
		return 0, 0, nil
	}
	cumulative = make([]uint64, len(h.counts)-1)
	for i := range h.counts {
		count += h.counts[i].Load()
		if i < len(cumulative) {
			cumulative[i] = count
		}
	}
	return count, time.Duration(h.sum.Load()), cumulative
}

// Reasons are the rejection reasons counted, in the order of Stats.Rejections.
var Reasons = [...]bulkhead.Reason{bulkhead.NoWait, bulkhead.QueueFull, bulkhead.WaitTimeout, bulkhead.Evicted}

// ReasonLabel returns the label value of a reason: no_wait, queue_full,
// wait_timeout, evicted.
func ReasonLabel(r bulkhead.Reason) string {
	switch r {
	case bulkhead.NoWait:
		return "no_wait"
	case bulkhead.QueueFull:
		return "queue_full"
	case bulkhead.WaitTimeout:
		return "wait_timeout"
	case bulkhead.Evicted:
		return "evicted"
	}
	return "other"
}

// Stats are the accumulations of one bulkhead name.
type Stats struct {
	// Granted holds the Wait of every CallPermitted (zero for a permit
	// granted at once), Rejected that of every CallRejected (zero for
	// NoWait and QueueFull).
	Granted, Rejected Histogram
	// Rejections counts the CallRejected events by reason, in the order
	// of Reasons.
	Rejections [len(Reasons)]atomic.Uint64
	// Shadowed counts the CallShadowed events of a bulkhead in shadow mode
	// by what would have happened: index 0 a wait (Reason zero), then the
	// reasons in the order of Reasons.
	Shadowed [1 + len(Reasons)]atomic.Uint64
}

// ShadowLabel returns the label value of the Shadowed counter at index i:
// would_wait, then the ReasonLabel of each reason.
func ShadowLabel(i int) string {
	if i == 0 {
		return "would_wait"
	}
	return ReasonLabel(Reasons[i-1])
}

// Table holds the Stats of every name that published an event. The zero
// value is not usable: call New.
type Table struct {
	bounds []time.Duration
	m      sync.Map // name -> *Stats
}

// New returns an empty table with the given bucket bounds (CheckBuckets
// must accept them; New panics otherwise).
func New(bounds []time.Duration) *Table {
	if err := CheckBuckets(bounds); err != nil {
		panic("waitstats: " + err.Error())
	}
	return &Table{bounds: slices.Clone(bounds)}
}

// Bounds returns the bucket bounds (do not modify them).
func (t *Table) Bounds() []time.Duration { return t.bounds }

// Record accounts for e. It runs on the goroutine that publishes e
// (concurrently for the same and for different names) and ignores the
// events that carry no wait, rejection nor shadow (CallFinished,
// CallCancelled).
func (t *Table) Record(e bulkhead.Event) {
	switch e.Type {
	case bulkhead.CallPermitted, bulkhead.CallRejected:
	case bulkhead.CallShadowed:
		if i := int(e.Reason); i < len(Stats{}.Shadowed) {
			t.stats(e.Name).Shadowed[i].Add(1)
		}
		return
	default:
		return
	}
	s := t.stats(e.Name)
	if e.Type == bulkhead.CallPermitted {
		s.Granted.observe(t.bounds, e.Wait)
		return
	}
	s.Rejected.observe(t.bounds, e.Wait)
	if i := int(e.Reason) - 1; i >= 0 && i < len(s.Rejections) {
		s.Rejections[i].Add(1)
	}
}

func (t *Table) stats(name string) *Stats {
	if v, ok := t.m.Load(name); ok {
		return v.(*Stats)
	}
	n := len(t.bounds)
	v, _ := t.m.LoadOrStore(name, &Stats{Granted: newHistogram(n), Rejected: newHistogram(n)})
	return v.(*Stats)
}

// Get returns the Stats of name, or nil if it published no event since the
// table was made (or since Forget).
func (t *Table) Get(name string) *Stats {
	v, ok := t.m.Load(name)
	if !ok {
		return nil
	}
	return v.(*Stats)
}

// Forget drops the Stats of name (an evicted bulkhead: its series go, and a
// bulkhead created again under the name counts from zero).
func (t *Table) Forget(name string) { t.m.Delete(name) }
