package otel

import (
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/rxbulkhead/bulkhead"
)

// kinds are the values of the kind label, indexed by EventType-1.
var kinds = [...]string{
	bulkhead.CallPermitted - 1: bulkhead.CallPermitted.String(),
	bulkhead.CallRejected - 1:  bulkhead.CallRejected.String(),
	bulkhead.CallFinished - 1:  bulkhead.CallFinished.String(),
	bulkhead.CallCancelled - 1: bulkhead.CallCancelled.String(),
}

// counts is the listener registered on one bulkhead. Its counters are only
// ever incremented, by the goroutines that publish the bulkhead's events,
// and read by scrapes: atomics suffice, no lock is on the hot path.
type counts struct {
	n      [len(kinds)]atomic.Uint64
	remove func()

	// Attribute sets of the bulkhead's observations, built once.
	name  metric.MeasurementOption
	kinds [len(kinds)]metric.MeasurementOption
}

func newCounts(name string) *counts {
	c := &counts{name: metric.WithAttributeSet(attribute.NewSet(attribute.String("name", name)))}
	for i, k := range kinds {
		c.kinds[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("name", name), attribute.String("kind", k)))
	}
	return c
}

func (c *counts) count(e bulkhead.Event) {
	if i := int(e.Type) - 1; i >= 0 && i < len(c.n) {
		c.n[i].Add(1)
	}
}

// tracked is one bulkhead of a collection with its counts (nil after close).
type tracked struct {
	s *bulkhead.Semaphore
	c *counts
}

// tracker keeps one event subscription per bulkhead of a registry. The
// registry has no hook for new bulkheads, so sync subscribes to the ones it
// has not seen yet: events that happen before a bulkhead's first sync are
// not counted. Its lock is held only to update the subscription map (and
// OnEvent's own short lock), never while events are published or while
// observations are recorded. sync also unsubscribes from bulkheads the registry no longer
// holds, so that removed bulkheads do not pin memory.
type tracker struct {
	reg *bulkhead.Registry

	mu     sync.Mutex // guards closed and subs; never held while events are published
	closed bool
	subs   map[*bulkhead.Semaphore]*counts
}

func newTracker(reg *bulkhead.Registry) *tracker {
	if reg == nil {
		panic("bulkhead/contrib/otel: nil *bulkhead.Registry")
	}
	t := &tracker{reg: reg, subs: map[*bulkhead.Semaphore]*counts{}}
	t.sync()
	return t
}

// sync brings the subscriptions in line with the registry and returns its
// bulkheads, sorted by name.
func (t *tracker) sync() []tracked {
	all := t.reg.All()
	out := make([]tracked, len(all))
	var stale []func()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		for i, s := range all {
			out[i] = tracked{s: s}
		}
		return out
	}
	live := make(map[*bulkhead.Semaphore]bool, len(all))
	for i, s := range all {
		live[s] = true
		c, ok := t.subs[s]
		if !ok {
			c = newCounts(s.Name())
			// OnEvent does not publish synchronously, so calling it
			// under t.mu cannot deadlock with c.count.
			c.remove = s.OnEvent(c.count)
			t.subs[s] = c
		}
		out[i] = tracked{s: s, c: c}
	}
	for s, c := range t.subs {
		if !live[s] {
			stale = append(stale, c.remove)
			delete(t.subs, s)
		}
	}
	t.mu.Unlock()
	for _, remove := range stale {
		remove()
	}
	return out
}

// close removes every subscription; later syncs subscribe to nothing.
func (t *tracker) close() {
	t.mu.Lock()
	t.closed = true
	subs := t.subs
	t.subs = nil
	t.mu.Unlock()
	for _, c := range subs {
		c.remove()
	}
}
