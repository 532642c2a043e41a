package testkit

import (
	"slices"
	"sync"
	"testing"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// EventSource is a bulkhead that publishes events, such as
// *bulkhead.Semaphore, *bulkhead.Pool or *bulkhead.Registry.
type EventSource interface {
	OnEvent(f func(bulkhead.Event)) (remove func())
}

// EventLog records the events of a bulkhead in the order they were
// published. It is safe for concurrent use.
type EventLog struct {
	mu     sync.Mutex
	events []bulkhead.Event
}

// RecordEvents starts recording the events of src and stops at the end of
// the test (t.Cleanup). It panics if src is nil.
func RecordEvents(t testing.TB, src EventSource) *EventLog {
	t.Helper()
	if isNil(src) {
		panic("testkit: RecordEvents called with a nil EventSource")
	}
	l := &EventLog{}
	t.Cleanup(src.OnEvent(l.add))
	return l
}

func (l *EventLog) add(e bulkhead.Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

// Events returns a copy of the events recorded so far.
func (l *EventLog) Events() []bulkhead.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// Types returns the types of the events recorded so far, in order.
func (l *EventLog) Types() []bulkhead.EventType {
	l.mu.Lock()
	defer l.mu.Unlock()
	types := make([]bulkhead.EventType, len(l.events))
	for i, e := range l.events {
		types[i] = e.Type
	}
	return types
}

// Strings returns the recorded events as short strings, a rejection with its
// reason: "permitted", "rejected(no wait)", "finished", "cancelled".
func (l *EventLog) Strings() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.events))
	for i, e := range l.events {
		out[i] = e.Type.String()
		if e.Type == bulkhead.CallRejected {
			out[i] += "(" + e.Reason.String() + ")"
		}
	}
	return out
}

// Count returns how many events of type t were recorded.
func (l *EventLog) Count(t bulkhead.EventType) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e.Type == t {
			n++
		}
	}
	return n
}
