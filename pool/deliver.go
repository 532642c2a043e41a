package pool

import (
	"runtime/debug"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/outcome"
)

// delivery is the user-visible part of deciding the outcome of one or more
// tasks, in this order: the events (listeners), the outcomes (Done closed),
// the callbacks (OnDone) task by task, then the callbacks' panics (the
// handler). Every piece of user code is taken off the delivery before it
// runs, so run is resumable: if user code ends the goroutine with
// runtime.Goexit, which no recover can stop, a goroutine that calls run
// again on the same delivery does exactly what is left (see deliver, and
// the worker's own guard in work). The deciding goroutine owns a delivery;
// a goroutine that takes over owns it from the go statement on.
type delivery struct {
	events int // events still to publish, all of type event with reason
	event  bulkhead.EventType
	reason bulkhead.Reason
	waits  []time.Duration // nil, or Event.Wait of each event, in order (waitsOf)
	// started is the start of the task of a CallFinished (publishPermitted).
	started time.Duration

	state   uint32   // the decided state of every task of the delivery
	one     *task    // a decided task not yet published that is in no list (a worker's, or a withdrawn one)
	decided taskList // decided tasks not yet published (a batch of the timer or Close)
	tasks   taskList // published tasks whose callbacks are not taken yet

	cur    job // the task whose callbacks run now
	has    bool
	first  any
	rest   []any
	panics []*outcome.Panic
}

// deliver runs d on the calling goroutine. If a listener, a callback or the
// panic handler calls runtime.Goexit, the goroutine ends as Goexit demands
// and a new goroutine delivers the rest, so no Future of d is left
// unpublished and every callback still runs once. Not for a worker, which
// resumes its whole loop instead (see work).
func (p *Pool) deliver(d *delivery) {
	returned := false
	defer func() {
		if !returned {
			rest := *d // only here does the delivery leave the stack
			go p.deliver(&rest)
		}
	}()
	p.runDelivery(d)
	returned = true
}

// runDelivery does what is left of d. It holds no lock while user code runs.
func (p *Pool) runDelivery(d *delivery) {
	for d.events > 0 {
		d.events--
		if d.waits != nil {
			p.publishWait(d.event, d.reason, d.waits[len(d.waits)-1-d.events])
			continue
		}
		if d.event == bulkhead.CallFinished {
			p.publishFinished(d.started)
			continue
		}
		p.publish(d.event, d.reason)
	}
	if t := d.one; t != nil {
		d.one = nil
		t.job.publish(d.state)
		d.takeCallbacks(t)
	}
	for t := d.decided.head; t != nil; t = d.decided.head {
		d.decided.remove(t)
		t.job.publish(d.state)
		d.tasks.push(t)
	}
	for {
		switch {
		case d.has:
			cb := d.first
			d.has, d.first = false, nil
			d.recoverPanic(cb)
		case len(d.rest) > 0:
			cb := d.rest[0]
			d.rest[0] = nil
			d.rest = d.rest[1:]
			d.recoverPanic(cb)
		case d.tasks.head != nil:
			t := d.tasks.head
			d.tasks.remove(t)
			d.takeCallbacks(t)
		default:
			d.cur = nil
			p.handlePanics(d)
			return
		}
	}
}

// takeCallbacks makes the callbacks of t, whose outcome is published, the
// ones to run next.
func (d *delivery) takeCallbacks(t *task) {
	first, rest, ok := t.cell.Take()
	if !ok {
		return
	}
	d.cur, d.has, d.first, d.rest = t.job, true, first, rest
}

// recoverPanic runs one callback of d.cur and keeps its panic. A
// runtime.Goexit is not a panic: recover returns nil and the goroutine
// goes on ending.
func (d *delivery) recoverPanic(cb any) {
	defer func() {
		if v := recover(); v != nil {
			d.panics = append(d.panics, &outcome.Panic{Value: v, Stack: debug.Stack()})
		}
	}()
	d.cur.call(cb)
}

// handlePanics hands the panics of d's callbacks to the pool's handler, one
// call each, on the calling goroutine; without a handler it raises the
// first on a new goroutine. Every delivery of d is done by then.
func (p *Pool) handlePanics(d *delivery) {
	h := p.onCallbackPanic
	if h == nil {
		if len(d.panics) > 0 {
			first := d.panics[0]
			d.panics = nil
			err := &callbackPanic{pool: p.name, value: first.Value, stack: first.Stack}
			go panic(err)
		}
		return
	}
	for len(d.panics) > 0 {
		pv := d.panics[0]
		d.panics[0] = nil
		d.panics = d.panics[1:]
		h(pv.Value, pv.Stack)
	}
}
