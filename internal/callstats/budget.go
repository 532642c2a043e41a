package callstats

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// This file counts what the exporters report of a bulkhead.Budget from its
// events (Budget.OnEvent), per class: the calls by event type, the permits
// granted (the sum of the granted calls' weights), the rejections by
// reason and the time calls waited in the budget. Gauges (permits in use,
// queued calls, groups) are not counted: the exporters read them from
// Budget.Metrics at each scrape. The partner of an event is not a label:
// partners are as many as the keys of a registry, classes are few and
// fixed by the configuration.

// BudgetReasons are the rejection reasons of a budget, in the order of
// ClassStats.Rejections: those of a Semaphore, then too_heavy (a
// *bulkhead.WeightError, whose event has Reason zero).
var BudgetReasons = [...]string{"no_wait", "queue_full", "wait_timeout", "evicted", "too_heavy"}

// ClassStats are the accumulations of one class of a budget. Each field is
// read with atomic loads while events may be counted, not as one snapshot.
type ClassStats struct {
	name string
	// Calls counts the events by type, in the order of Kinds.
	Calls [len(Kinds)]atomic.Uint64
	// Permits is the sum of the weights of the granted calls.
	Permits atomic.Uint64
	// Granted holds the Wait of every CallPermitted (zero for a call
	// granted at once), Rejected that of every CallRejected.
	Granted, Rejected Histogram
	// Rejections counts the CallRejected events by reason, in the order
	// of BudgetReasons.
	Rejections [len(BudgetReasons)]atomic.Uint64
}

// Count returns the number of events of type k counted (0 for a type Calls
// does not count).
func (s *ClassStats) Count(k bulkhead.EventType) uint64 {
	if i := uint(k) - 1; i < uint(len(s.Calls)) {
		return s.Calls[i].Load()
	}
	return 0
}

// BudgetWatch counts the events of one bulkhead.Budget, per class, from
// the moment it is made until Close.
type BudgetWatch struct {
	Budget     *bulkhead.Budget
	waitBounds []time.Duration // nil: no histogram (an exporter that records its own)
	hook       func(bulkhead.BudgetEvent)
	// classes holds the ClassStats of every class that had an event, in a
	// slice replaced (never modified) under mu when a class is added: a
	// budget has a few classes, whose events carry the class's own name
	// string, so a scan comparing names (equal pointers compare at once)
	// finds one faster than a map's hashing.
	classes atomic.Pointer[[]*ClassStats]
	mu      sync.Mutex
	stop    func()
}

// NewBudgetWatch starts counting the events of b with the given bounds of
// the wait histograms (nil: none; otherwise they must pass CheckBuckets,
// or it panics). hook, if not nil, runs after each event is counted, on
// the goroutine that publishes it. Call Close to stop.
func NewBudgetWatch(b *bulkhead.Budget, waitBounds []time.Duration, hook func(bulkhead.BudgetEvent)) *BudgetWatch {
	if waitBounds != nil {
		if err := CheckBuckets(waitBounds); err != nil {
			panic("callstats: " + err.Error())
		}
	}
	w := &BudgetWatch{Budget: b, waitBounds: waitBounds, hook: hook}
	w.stop = b.OnEvent(w.record)
	return w
}

// WaitBounds returns the bucket bounds of the wait histograms (do not
// modify them).
func (w *BudgetWatch) WaitBounds() []time.Duration { return w.waitBounds }

// Record accounts for e. It runs on the goroutine that publishes e,
// concurrently for the same and for different classes.
func (w *BudgetWatch) Record(e bulkhead.BudgetEvent) {
	s := w.class(e.Class)
	if i := uint(e.Type) - 1; i < uint(len(s.Calls)) {
		s.Calls[i].Add(1)
	}
	switch e.Type {
	case bulkhead.CallPermitted:
		s.Permits.Add(uint64(max(e.Weight, 0)))
		s.Granted.observe(w.waitBounds, e.Wait)
	case bulkhead.CallRejected:
		s.Rejected.observe(w.waitBounds, e.Wait)
		if i := budgetReasonIndex(e.Reason); i >= 0 {
			s.Rejections[i].Add(1)
		}
	}
}

func (w *BudgetWatch) record(e bulkhead.BudgetEvent) {
	w.Record(e)
	if w.hook != nil {
		w.hook(e)
	}
}

// budgetReasonIndex is the index in BudgetReasons of a rejection's reason,
// or -1.
func budgetReasonIndex(r bulkhead.Reason) int {
	switch r {
	case bulkhead.NoWait:
		return 0
	case bulkhead.QueueFull:
		return 1
	case bulkhead.WaitTimeout:
		return 2
	case bulkhead.Evicted:
		return 3
	case 0: // a *bulkhead.WeightError
		return 4
	}
	return -1 // a reason no budget gives (Unavailable): counted as a rejection only
}

func (w *BudgetWatch) class(name string) *ClassStats {
	if s := w.Class(name); s != nil {
		return s
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.Class(name); s != nil { // added meanwhile
		return s
	}
	s := &ClassStats{name: name, Granted: newHistogram(len(w.waitBounds)), Rejected: newHistogram(len(w.waitBounds))}
	var next []*ClassStats
	if cur := w.classes.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, s)
	w.classes.Store(&next)
	return s
}

// Class returns the counts of the class name, or nil if no event of it was
// counted.
func (w *BudgetWatch) Class(name string) *ClassStats {
	if cur := w.classes.Load(); cur != nil {
		for _, s := range *cur {
			if s.name == name {
				return s
			}
		}
	}
	return nil
}

// Close stops counting; the counts stay. It is idempotent.
func (w *BudgetWatch) Close() { w.stop() }
