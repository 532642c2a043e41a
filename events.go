package bulkhead

import (
	"fmt"
	"time"

	"github.com/rxbulkhead/bulkhead/internal/publish"
)

// EventType says what happened to a call.
type EventType uint8

const (
	// CallPermitted: a permit was granted (at once or after a wait).
	CallPermitted EventType = iota + 1
	// CallRejected: the call was rejected; Event.Reason says why.
	CallRejected
	// CallFinished: a permit came back through FinishCall.
	CallFinished
	// CallCancelled: a waiting call was withdrawn by Acquisition.Cancel.
	CallCancelled
	// CallShadowed: a bulkhead in shadow mode (Config.ShadowMode) let a
	// call through that it would have rejected (Event.Reason: NoWait,
	// QueueFull, or Evicted for a full LIFO queue) or queued (Reason zero).
	// The call's CallPermitted follows.
	CallShadowed
)

// String returns "permitted", "rejected", "finished", "cancelled" or
// "shadowed".
func (t EventType) String() string {
	switch t {
	case CallPermitted:
		return "permitted"
	case CallRejected:
		return "rejected"
	case CallFinished:
		return "finished"
	case CallCancelled:
		return "cancelled"
	case CallShadowed:
		return "shadowed"
	}
	return fmt.Sprintf("EventType(%d)", uint8(t))
}

// Event is what a bulkhead publishes to its listeners: a Semaphore to those
// registered with Semaphore.OnEvent, a Registry to those of
// Registry.OnEvent (for all its bulkheads), the pool to those of its own
// OnEvent. Each says which goroutine runs the listener.
type Event struct {
	Type   EventType
	Name   string    // the bulkhead's name
	Time   time.Time // from the bulkhead's Clock
	Reason Reason    // for CallRejected and CallShadowed; zero otherwise
	// Wait is how long the call waited in the queue, for a CallPermitted
	// or CallRejected (WaitTimeout, Evicted) of a call that was queued:
	// from its enqueue to the clock reading of Time, on the bulkhead's
	// Clock. It is zero for a call decided at once (and a rejection
	// NoWait or QueueFull), for a CallFinished or CallCancelled, and for a
	// NoTimeout wait that began before any listener was registered. If
	// ChangeConfig changed MaxWaitDuration while a call with a bounded
	// wait was queued, its Wait is off by that change (never negative).
	// Recording it adds no allocation and no field to a queued call.
	Wait time.Duration
}

// String renders the event for logs.
func (e Event) String() string {
	if e.Type == CallShadowed {
		if e.Reason == 0 {
			return fmt.Sprintf("%s bulkhead %q: %s (would have waited)", e.Time.Format(time.RFC3339Nano), e.Name, e.Type)
		}
		return fmt.Sprintf("%s bulkhead %q: %s (would have been rejected: %s)", e.Time.Format(time.RFC3339Nano), e.Name, e.Type, e.Reason)
	}
	if e.Type == CallRejected {
		if e.Wait > 0 {
			return fmt.Sprintf("%s bulkhead %q: %s (%s) after waiting %s", e.Time.Format(time.RFC3339Nano), e.Name, e.Type, e.Reason, e.Wait)
		}
		return fmt.Sprintf("%s bulkhead %q: %s (%s)", e.Time.Format(time.RFC3339Nano), e.Name, e.Type, e.Reason)
	}
	if e.Wait > 0 {
		return fmt.Sprintf("%s bulkhead %q: %s after waiting %s", e.Time.Format(time.RFC3339Nano), e.Name, e.Type, e.Wait)
	}
	return fmt.Sprintf("%s bulkhead %q: %s", e.Time.Format(time.RFC3339Nano), e.Name, e.Type)
}

// publisher holds the listeners of one Semaphore (internal/publish, shared
// with package pool): publishing reads one atomic pointer and costs nothing
// when no listener is registered.
type publisher struct{ publish.Listeners[Event] }

func (p *publisher) active() bool { return p.Active() }

func (p *publisher) add(f func(Event)) (remove func()) {
	if f == nil {
		panic("bulkhead: OnEvent called with a nil listener")
	}
	return p.Add(f)
}

// publish calls every listener on the calling goroutine, never under a lock
// of the bulkhead. A panicking listener is recovered and skipped, so it can
// neither corrupt the bulkhead nor starve the other listeners.
func (p *publisher) publish(e Event) { p.Publish(e) }
