// Package callstats accumulates, per bulkhead name, what the metrics
// exporters (contrib/prometheus, contrib/otel) report from events: the
// calls by event type, a histogram of the time calls waited for a permit
// (granted and rejected apart), a histogram of the time calls ran (their
// CallDuration), the rejections by reason and the calls let through in
// shadow mode. A Watch feeds a Table from a bulkhead.MetricsSource, so
// every kind of bulkhead (Semaphores, pools, the fleet) is counted alike.
// It imports nothing but the root package and the standard library.
//
// Recording takes no lock and allocates nothing once a name has its entry:
// a lookup of the name (most often one slot of a cache keyed by the address
// of the name's bytes, else a lock-free map lookup), an atomic add, and for
// a histogram a binary search over the bucket bounds and two atomic adds.
package callstats

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rxbulkhead/bulkhead"
)

// DefaultWaitBuckets are the upper bounds of the wait histogram, from
// 100 µs (a queue handing a permit on at once) to 10 s (the longest waits
// users configure).
var DefaultWaitBuckets = []time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// DefaultDurationBuckets are the upper bounds of the call-duration
// histogram, from 500 µs (an in-memory call) to 60 s (the longest client
// timeouts in use).
var DefaultDurationBuckets = []time.Duration{
	500 * time.Microsecond, time.Millisecond, 2500 * time.Microsecond,
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2500 * time.Millisecond,
	5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute,
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
// cumulative); the last counts the durations above every bound. The zero
// Histogram (no buckets) counts nothing.
type Histogram struct {
	counts []atomic.Uint64
	sum    atomic.Int64 // nanoseconds
}

func newHistogram(n int) Histogram {
	if n == 0 {
		return Histogram{}
	}
	return Histogram{counts: make([]atomic.Uint64, n+1)}
}

func (h *Histogram) observe(bounds []time.Duration, d time.Duration) {
	if len(h.counts) == 0 {
		return
	}
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

// Kinds are the event types counted in Stats.Calls, in its order.
var Kinds = [...]bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallRejected, bulkhead.CallFinished, bulkhead.CallCancelled}

// Reasons are the rejection reasons counted, in the order of
// Stats.Rejections: every Reason there is, so that no rejection goes
// uncounted by reason.
var Reasons = [...]bulkhead.Reason{bulkhead.NoWait, bulkhead.QueueFull, bulkhead.WaitTimeout, bulkhead.Evicted, bulkhead.Unavailable}

// ShadowReasons are the reasons a bulkhead in shadow mode reports for a call
// it would have rejected, in the order of Stats.Shadowed after its first
// index (a wait): shadow mode never reports a wait timeout (a call it lets
// through never waits) nor Unavailable (no Semaphore rejects for it).
var ShadowReasons = [...]bulkhead.Reason{bulkhead.NoWait, bulkhead.QueueFull, bulkhead.Evicted}

// ReasonLabel returns the label value of a reason: no_wait, queue_full,
// wait_timeout, evicted, unavailable.
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
	case bulkhead.Unavailable:
		return "unavailable"
	}
	return "other"
}

// shadowIndex returns the index in Stats.Shadowed of a CallShadowed of
// reason r: 0 for a wait (Reason zero), then that of r in ShadowReasons,
// and -1 for a reason shadow mode does not report.
func shadowIndex(r bulkhead.Reason) int {
	switch r {
	case 0:
		return 0
	case bulkhead.NoWait:
		return 1
	case bulkhead.QueueFull:
		return 2
	case bulkhead.Evicted:
		return 3
	}
	return -1
}

// Stats are the accumulations of one bulkhead name. Each field is read
// with atomic loads while events may be counted, not as one snapshot.
type Stats struct {
	// name is the name of the event that created the entry, whose bytes'
	// address keys the Table's cache; dead is set by Forget (the cache
	// then ignores the entry).
	name string
	dead atomic.Bool

	// Calls counts the events by type, in the order of Kinds.
	Calls [len(Kinds)]atomic.Uint64
	// Granted holds the Wait of every CallPermitted (zero for a permit
	// granted at once), Rejected that of every CallRejected (zero for
	// NoWait and QueueFull).
	Granted, Rejected Histogram
	// Duration holds the CallDuration of every CallFinished that has one
	// (a call whose finish knew its start; see bulkhead.Event).
	Duration Histogram
	// Rejections counts the CallRejected events by reason, in the order
	// of Reasons.
	Rejections [len(Reasons)]atomic.Uint64
	// Shadowed counts the CallShadowed events of a bulkhead in shadow mode
	// by what would have happened: index 0 a wait (Reason zero), then the
	// reasons in the order of ShadowReasons.
	Shadowed [1 + len(ShadowReasons)]atomic.Uint64
}

// ShadowCounts returns the Shadowed counters, in their order, and whether
// the bulkhead's shadow series are to be exported: if inShadowMode (its
// Metrics.ShadowMode) or if one of them is not zero (it was in shadow
// mode), so that bulkheads that never used shadow mode have none.
func (s *Stats) ShadowCounts(inShadowMode bool) (counts [len(ShadowReasons) + 1]uint64, export bool) {
	export = inShadowMode
	for i := range s.Shadowed {
		counts[i] = s.Shadowed[i].Load()
		export = export || counts[i] > 0
	}
	return counts, export
}

// Count returns the number of events of type k counted (0 for a type
// Calls does not count).
func (s *Stats) Count(k bulkhead.EventType) uint64 {
	if i := uint(k) - 1; i < uint(len(s.Calls)) {
		return s.Calls[i].Load()
	}
	return 0
}

// ShadowLabel returns the label value of the Shadowed counter at index i:
// would_wait, then the ReasonLabel of each of ShadowReasons.
func ShadowLabel(i int) string {
	if i == 0 {
		return "would_wait"
	}
	return ReasonLabel(ShadowReasons[i-1])
}

// Table holds the Stats of every name that published an event. The zero
// value is not usable: call New.
//
// The map m (name -> *Stats) decides which Stats a name has: LoadOrStore
// makes two racing first events of a name share one, Forget deletes it. In
// front of it, cache spares the events of a bulkhead the hashing of its
// name: they all carry the same string (the bulkhead's Name field), so the
// address of its bytes finds the Stats. A slot holds a *Stats whose name
// is that very string; since the Stats keeps the string alive, no other
// string can have that address while the slot holds it, so an address
// match is a name match. Forget deletes the Stats from m and marks it
// dead, and a lookup takes a dead Stats for a miss: a slot written by a
// Record that raced with Forget cannot bring a forgotten name's Stats back
// (a name re-created as the same string, a literal say, counts from zero). A
// miss (an empty or colliding slot, a name re-created as another string)
// falls back to m and refills the slot; nothing is allocated.
type Table struct {
	waitBounds, durationBounds []time.Duration // nil: no such histogram
	m                          sync.Map        // name -> *Stats
	cache                      [1 << cacheBits]atomic.Pointer[Stats]
}

// cacheBits sizes a Table's cache: 256 slots, enough for the busy
// bulkheads of a large registry, 2 KiB per Table.
const cacheBits = 8

// New returns an empty table with the given bucket bounds of the wait and
// call-duration histograms; nil bounds keep no such histogram (an
// exporter that records its own). Non-nil bounds must pass CheckBuckets;
// New panics otherwise.
func New(waitBounds, durationBounds []time.Duration) *Table {
	for _, b := range [][]time.Duration{waitBounds, durationBounds} {
		if b == nil {
			continue
		}
		if err := CheckBuckets(b); err != nil {
			panic("callstats: " + err.Error())
		}
	}
	return &Table{waitBounds: slices.Clone(waitBounds), durationBounds: slices.Clone(durationBounds)}
}

// WaitBounds returns the bucket bounds of the wait histograms (do not
// modify them).
func (t *Table) WaitBounds() []time.Duration { return t.waitBounds }

// DurationBounds returns the bucket bounds of the call-duration histogram
// (do not modify them).
func (t *Table) DurationBounds() []time.Duration { return t.durationBounds }

// Record accounts for e. It runs on the goroutine that publishes e,
// concurrently for the same and for different names.
func (t *Table) Record(e bulkhead.Event) {
	s := t.stats(e.Name)
	if i := uint(e.Type) - 1; i < uint(len(s.Calls)) {
		s.Calls[i].Add(1)
	}
	switch e.Type {
	case bulkhead.CallPermitted:
		s.Granted.observe(t.waitBounds, e.Wait)
	case bulkhead.CallRejected:
		s.Rejected.observe(t.waitBounds, e.Wait)
		if i := int(e.Reason) - 1; i >= 0 && i < len(s.Rejections) {
			s.Rejections[i].Add(1)
		}
	case bulkhead.CallFinished:
		if e.CallDuration > 0 {
			s.Duration.observe(t.durationBounds, e.CallDuration)
		}
	case bulkhead.CallShadowed:
		if i := shadowIndex(e.Reason); i >= 0 {
			s.Shadowed[i].Add(1)
		}
	}
}

// stats returns the Stats of name, creating them on its first event.
func (t *Table) stats(name string) *Stats {
	p := unsafe.StringData(name)
	slot := &t.cache[uint64(uintptr(unsafe.Pointer(p)))*0x9E3779B97F4A7C15>>(64-cacheBits)] // Fibonacci hashing
	if s := slot.Load(); s != nil && unsafe.StringData(s.name) == p && len(s.name) == len(name) && !s.dead.Load() {
		return s
	}
	s := t.lookup(name)
	slot.Store(s)
	return s
}

func (t *Table) lookup(name string) *Stats {
	if v, ok := t.m.Load(name); ok {
		return v.(*Stats)
	}
	v, _ := t.m.LoadOrStore(name, &Stats{
		name:     name,
		Granted:  newHistogram(len(t.waitBounds)),
		Rejected: newHistogram(len(t.waitBounds)),
		Duration: newHistogram(len(t.durationBounds)),
	})
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
func (t *Table) Forget(name string) {
	if v, ok := t.m.LoadAndDelete(name); ok {
		v.(*Stats).dead.Store(true)
	}
}
