package callcount

import (
	"sync"
	"sync/atomic"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/callstats"
)

// Counts are the numbers of events a bulkhead published, by type.
type Counts struct {
	Permitted uint64 // CallPermitted events: permits granted
	Rejected  uint64 // CallRejected events, whatever the Reason
	Finished  uint64 // CallFinished events: permits returned by FinishCall
	Cancelled uint64 // CallCancelled events: waiting calls withdrawn
}

// Counter counts the events of every bulkhead of a bulkhead.MetricsSource
// (a bulkhead.Registry, a pool.Registry's MetricsSource, the fleet's
// Registry), by bulkhead name and event type.
//
// It listens with the source's OnEvent, so it counts the events of a
// bulkhead created after New from the bulkhead's creation: nobody can use
// the bulkhead before the counter is subscribed. The bulkheads that exist
// when New is called are counted from then on.
//
// Counts are kept per name, for the life of the counter. A bulkhead removed
// from the registry is no longer counted (Registry.Remove unsubscribes the
// counter) and its counts stay as they were; a bulkhead created again under
// that name continues them. So the counts of a name never go down, which is
// what a monitoring counter needs. A counter keeps one entry (64 bytes of
// counters, plus the map's node) per name that published an event, until
// the source evicts that name's bulkhead as idle (bulkhead.WithIdleTimeout,
// MetricsSource.OnEvict): then its counts are forgotten, and a bulkhead created
// again under that name counts from zero, so that a million passing keys
// leave no counts behind.
//
// Goroutines: the counter's listener runs on whichever goroutine publishes
// an event (see bulkhead.Semaphore.OnEvent) — the caller of
// TryAcquirePermission, AcquirePermissionAsync, FinishCall or Cancel, the
// goroutine that delivers a queued call's grant (a releaser, a ChangeConfig
// or fileconfig.Apply caller), or the
// Clock's timer goroutine for a wait timeout — concurrently for different
// and for the same bulkheads. Counts and Close may be called from any
// goroutine. The listener takes no lock once a name has its entry: one
// lock-free map lookup and one atomic add per event.
type Counter struct {
	// counts maps a bulkhead name (string) to its *callCounts. Entries
	// are added by the first event of a name (LoadOrStore decides which
	// of two racing first events creates it; both then add to the same
	// entry) and removed only when the registry evicts the name's
	// bulkhead (OnEvict, after unsubscribing its listeners, so no event of
	// it is counted any more).
	counts sync.Map
	remove func() // from bulkhead.Registry.OnEvent; idempotent
	forget func() // from bulkhead.Registry.OnEvict; idempotent
}

// callCounts holds the counters of one name, indexed by EventType-1. They
// are only incremented (by the publishing goroutines) and read one by one
// (by Counts), so atomics suffice. The padding gives each name its own
// cache line, so that busy bulkheads of different partners do not slow
// each other down through false sharing.
type callCounts struct {
	n [4]atomic.Uint64
	_ [64 - 4*8]byte
}

// New starts counting the events of every bulkhead of src, present and
// future, until Close. A *bulkhead.Registry is a MetricsSource. It panics
// if src is nil: the nil interface, or a nil pointer in it (a nil
// *bulkhead.Registry, a nil fleet *Registry), as the exporters treat it.
func New(src bulkhead.MetricsSource) *Counter {
	if callstats.IsNil(src) {
		panic("callcount: New called with a nil bulkhead.MetricsSource")
	}
	c := &Counter{}
	c.forget = src.OnEvict(func(name string) { c.counts.Delete(name) })
	c.remove = src.OnEvent(c.count)
	return c
}

// count is the listener: it runs on the goroutine that publishes e.
func (c *Counter) count(e bulkhead.Event) {
	i := uint(e.Type) - 1
	if i >= uint(len(callCounts{}.n)) {
		return // an event type this counter does not know
	}
	v, ok := c.counts.Load(e.Name)
	if !ok {
		v, _ = c.counts.LoadOrStore(e.Name, new(callCounts))
	}
	v.(*callCounts).n[i].Add(1)
}

// Counts returns the counts of the bulkhead named name; all zero if it
// published no event since the counter started. The fields are read one
// after the other while events may be counted, not as one snapshot.
// Finished is read before Permitted: if the bulkhead held no permit when the
// counter started and each call's CallPermitted is published before its
// CallFinished (as when one goroutine acquires and completes), Counts never
// reports more finished than permitted calls. A call granted after it
// waited in a queue does not meet that condition: its CallPermitted is
// published by the goroutine that granted it, after the grant is visible
// (Semaphore.OnEvent), so the call may finish, and be counted finished,
// first. After Close, Counts returns the counts as they were then.
func (c *Counter) Counts(name string) Counts {
	v, ok := c.counts.Load(name)
	if !ok {
		return Counts{}
	}
	n := &v.(*callCounts).n
	var out Counts
	out.Finished = n[bulkhead.CallFinished-1].Load()
	out.Cancelled = n[bulkhead.CallCancelled-1].Load()
	out.Rejected = n[bulkhead.CallRejected-1].Load()
	out.Permitted = n[bulkhead.CallPermitted-1].Load()
	return out
}

// Close stops counting: it unsubscribes the counter from every bulkhead of
// the source, present and future. An event published after Close returns
// (on the same goroutine, or on one synchronised with it) is not counted; an
// event that another goroutine publishes while Close runs may be. Close is
// idempotent.
func (c *Counter) Close() {
	c.remove()
	c.forget()
}
