package pool

import (
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// publishPermitted publishes the CallPermitted of t, which a worker starts
// now, with the time t waited in the queue (zero if it went to a worker at
// once, or if its enqueue time is unknown: see task.queuedAt).
func (p *Pool) publishPermitted(t *task) {
	if !p.events.Active() {
		return
	}
	now := p.clock.Now()
	var wait time.Duration
	if t.queued {
		wait = max(now.Sub(p.epoch)-t.queuedAt, 0)
	}
	p.events.Publish(bulkhead.Event{Type: bulkhead.CallPermitted, Name: p.name, Time: now, Wait: wait})
}

// publishWait publishes an event with the given Event.Wait.
func (p *Pool) publishWait(t bulkhead.EventType, r bulkhead.Reason, wait time.Duration) {
	if !p.events.Active() {
		return
	}
	p.events.Publish(bulkhead.Event{Type: t, Name: p.name, Time: p.clock.Now(), Reason: r, Wait: wait})
}

// waitsOf returns the time each task of l (decided now, unlinked from the
// queue) waited, in list order: the Event.Wait of their rejections.
func (p *Pool) waitsOf(l *taskList) []time.Duration {
	now := p.now()
	waits := make([]time.Duration, 0, l.n)
	for t := l.head; t != nil; t = t.next {
		var w time.Duration
		if t.queued {
			w = max(now-t.queuedAt, 0)
		}
		waits = append(waits, w)
	}
	return waits
}
