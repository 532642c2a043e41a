package pool

import (
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// publishPermitted publishes the CallPermitted of t, which a worker starts
// now, with the time t waited in the queue (zero if it went to a worker at
// once, or if its enqueue time is unknown: see task.queuedAt). It returns
// the task's start, the event's time as an offset from the pool's epoch,
// for the CallDuration of its CallFinished, or unknownStart if no listener
// is registered (then it reads no clock).
func (p *Pool) publishPermitted(t *task) (start time.Duration) {
	if !p.events.Active() {
		return unknownStart
	}
	now := p.clock.Now()
	start = now.Sub(p.epoch)
	var wait time.Duration
	if t.queued {
		wait = max(start-t.queuedAt, 0)
	}
	p.events.Publish(bulkhead.Event{Type: bulkhead.CallPermitted, Name: p.name, Time: now, Wait: wait})
	return start
}

// unknownStart is the start of a task that began while no listener was
// registered: its CallFinished carries no CallDuration.
const unknownStart time.Duration = -1 << 63

// publishFinished publishes the CallFinished of a task that started at
// start (publishPermitted), with the time it ran.
func (p *Pool) publishFinished(start time.Duration) {
	if !p.events.Active() {
		return
	}
	now := p.clock.Now()
	var ran time.Duration
	if start != unknownStart {
		ran = max(now.Sub(p.epoch)-start, 0)
	}
	p.events.Publish(bulkhead.Event{Type: bulkhead.CallFinished, Name: p.name, Time: now, CallDuration: ran})
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
