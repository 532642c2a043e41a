package bulkhead

import (
	"fmt"
	"sync/atomic"
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
	// ChangeConfig changed MaxWaitDuration from one bounded wait to
	// another while a call with a bounded wait was queued, and a call was
	// queued with the new wait before that call was decided, its Wait is
	// off by that change (never negative); a change to NoTimeout, and a
	// bounded wait of any length (up to NoTimeout - 1), leave it exact.
	// Recording it adds no allocation and no field to a queued call.
	Wait time.Duration
	// CallDuration is how long the call held its permit, for a
	// CallFinished whose finishing code knew which call finished: from the
	// call's grant to its FinishCall, on the bulkhead's Clock. The
	// Semaphore knows it when the permit comes back through
	// FinishCallStarted (given StartCall's CallStart), a Registry's Lease,
	// the reactive operators (packages observable, flowable, single, maybe,
	// completable), an adaptive bulkhead's Call or operator; a Pool knows
	// it for every task. It is zero for a bare Semaphore.FinishCall (which
	// does not say which call finished), for a call whose start was taken
	// while no listener was registered, and for every other event type.
	// Measuring it reads no clock beyond the one stamping each event.
	CallDuration time.Duration
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
	if e.CallDuration > 0 {
		return fmt.Sprintf("%s bulkhead %q: %s after running %s", e.Time.Format(time.RFC3339Nano), e.Name, e.Type, e.CallDuration)
	}
	return fmt.Sprintf("%s bulkhead %q: %s", e.Time.Format(time.RFC3339Nano), e.Name, e.Type)
}

// publisher holds the listeners of one Semaphore (internal/publish, shared
// with package pool): publishing reads one atomic pointer and costs nothing
// when no listener is registered. It also keeps the stamp of the latest
// grant that StartCall hands out (callduration.go).
type publisher struct {
	publish.Listeners[Event]
	stamps
}

func (p *publisher) active() bool { return p.Active() }

// add registers f (not nil: Semaphore.OnEvent checks it). The Semaphore's
// mu is held, so that its listenerBit changes with the list.
func (p *publisher) add(f func(Event)) (remove func()) {
	if !p.Active() {
		// No event was stamped while nobody listened: a stamp from before
		// would predate grants made since.
		p.last.Store(0)
	}
	return p.Add(f)
}

// publish calls every listener on the calling goroutine, never under a lock
// of the bulkhead. A panicking listener is recovered and skipped, so it can
// neither corrupt the bulkhead nor starve the other listeners. A
// CallPermitted's Time becomes the latest grant stamp first.
func (p *publisher) publish(e Event) {
	if e.Type == CallPermitted {
		p.stamp(e.Time)
	}
	p.Publish(e)
}

// stamps are a Semaphore's grant stamps (callduration.go).
type stamps struct {
	// epoch is the Time of the first event stamped: stamps are offsets
	// from it, so that they fit one atomic word whatever the Clock.
	epoch atomic.Pointer[time.Time]
	// last is the latest grant stamp: the Time of the latest CallPermitted
	// published, as an offset from epoch plus one (so never 0), or 0 for
	// none since the listeners were last registered. It only grows (one
	// CAS decides between two stamping goroutines).
	last atomic.Int64
}
