package bulkhead

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
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
)

// String returns "permitted", "rejected", "finished" or "cancelled".
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
	}
	return fmt.Sprintf("EventType(%d)", uint8(t))
}

// Event is published to the listeners registered with Semaphore.OnEvent.
type Event struct {
	Type   EventType
	Name   string    // the bulkhead's name
	Time   time.Time // from the bulkhead's Clock
	Reason Reason    // for CallRejected; zero otherwise
}

// String renders the event for logs.
func (e Event) String() string {
	if e.Type == CallRejected {
		return fmt.Sprintf("%s bulkhead '%s': %s (%s)", e.Time.Format(time.RFC3339Nano), e.Name, e.Type, e.Reason)
	}
	return fmt.Sprintf("%s bulkhead '%s': %s", e.Time.Format(time.RFC3339Nano), e.Name, e.Type)
}

// listener is one registered callback; its identity is what remove compares.
type listener struct{ f func(Event) }

// publisher holds the listeners of one bulkhead as a copy-on-write slice, so
// publishing reads one atomic pointer and costs nothing when it is nil.
type publisher struct {
	mu        sync.Mutex // serialises add and remove
	listeners atomic.Pointer[[]*listener]
}

func (p *publisher) active() bool { return p.listeners.Load() != nil }

func (p *publisher) add(f func(Event)) (remove func()) {
	if f == nil {
		panic("bulkhead: OnEvent called with a nil listener")
	}
	l := &listener{f: f}
	p.mu.Lock()
	var next []*listener
	if cur := p.listeners.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, l)
	p.listeners.Store(&next)
	p.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { p.remove(l) }) }
}

func (p *publisher) remove(l *listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.listeners.Load()
	if cur == nil {
		return
	}
	next := make([]*listener, 0, len(*cur))
	for _, x := range *cur {
		if x != l {
			next = append(next, x)
		}
	}
	if len(next) == 0 {
		p.listeners.Store(nil)
		return
	}
	p.listeners.Store(&next)
}

// publish calls every listener on the calling goroutine, never under a lock
// of the bulkhead. A panicking listener is recovered and skipped, so it can
// neither corrupt the bulkhead nor starve the other listeners.
func (p *publisher) publish(e Event) {
	ls := p.listeners.Load()
	if ls == nil {
		return
	}
	for _, l := range *ls {
		callListener(l.f, e)
	}
}

func callListener(f func(Event), e Event) {
	defer func() { _ = recover() }()
	f(e)
}
