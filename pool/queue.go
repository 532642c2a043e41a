package pool

import (
	"context"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/clock"
)

// taskList is an intrusive doubly linked list of tasks through their prev
// and next fields, oldest at head. A task is in at most one list at a time:
// the queue or the running set (under the Pool's mu), or a local list of
// outcomes to deliver that only its builder touches.
type taskList struct {
	head, tail *task
	n          int
}

func (l *taskList) push(t *task) {
	t.prev = l.tail
	t.next = nil
	if l.tail != nil {
		l.tail.next = t
	} else {
		l.head = t
	}
	l.tail = t
	l.n++
}

func (l *taskList) remove(t *task) {
	if t.prev != nil {
		t.prev.next = t.next
	} else {
		l.head = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	} else {
		l.tail = t.prev
	}
	t.prev, t.next = nil, nil
	l.n--
}

// enqueueLocked queues t (still taskQueued) with its MaxQueueWait deadline
// and watches ctx, which withdraws t when it ends.
func (p *Pool) enqueueLocked(t *task, ctx context.Context) {
	p.queue.push(t)
	if p.cfg.MaxQueueWait != bulkhead.NoTimeout {
		now := p.now()
		t.queuedAt, t.queued = now, true
		t.deadline = clock.Add(now, p.cfg.MaxQueueWait)
		if p.waitTimer == nil {
			p.armWaitTimerLocked(now, t.deadline)
		}
	} else if p.events.Active() {
		t.queuedAt, t.queued = p.now(), true
	}
	if ctx.Done() != nil {
		// Registered under mu so that the worker which takes t reads t.stop
		// after this write. AfterFunc runs onCtxDone on a new goroutine,
		// never here, so it cannot deadlock on mu.
		t.stop = context.AfterFunc(ctx, t.onCtxDone)
	}
}

// dequeueLocked pops queued tasks until it wins the CAS of one. A task whose
// CAS fails was withdrawn concurrently; its withdrawer, finding it unlinked,
// publishes it.
func (p *Pool) dequeueLocked() *task {
	for t := p.queue.head; t != nil; t = p.queue.head {
		p.unqueueLocked(t)
		if t.cell.CompareAndSwap(taskQueued, taskRunning) {
			return t
		}
	}
	return nil
}

// unqueueLocked unlinks t from the queue. The unlink that empties the queue
// stops the MaxQueueWait timer: no timer stays armed while nothing waits.
func (p *Pool) unqueueLocked(t *task) {
	p.queue.remove(t)
	if p.queue.n == 0 && p.waitTimer != nil {
		p.waitTimer.Stop()
		p.waitTimer = nil
		p.waitGen++
	}
}

// withdraw is called by the goroutine whose CAS withdrew t from the queue:
// it unlinks t (unless a worker, the timer or Close already did) and stops
// watching its context. The caller then delivers CallCancelled and t's
// outcome.
func (p *Pool) withdraw(t *task) {
	p.mu.Lock()
	if p.queuedLocked(t) {
		p.unqueueLocked(t)
	}
	stop := t.stop
	t.stop = nil
	p.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// queuedLocked reports whether t, whose CAS withdrew it, is still linked in
// the queue. Such a task is in no other list: a worker, the timer or Close
// that found it first unlinked it and, having lost its CAS, kept it in none
// (prev and next nil). So it is linked exactly when it is the head or has a
// predecessor; this saves a flag in every task.
func (p *Pool) queuedLocked(t *task) bool { return p.queue.head == t || t.prev != nil }

// armWaitTimerLocked arms the MaxQueueWait timer. Queue deadlines are in
// queue order (MaxQueueWait is fixed), so one timer for the head suffices;
// after the head left, the timer may fire early and re-arms.
func (p *Pool) armWaitTimerLocked(now, deadline time.Duration) {
	p.waitGen++
	gen := p.waitGen
	p.waitTimer = p.clock.AfterFunc(max(deadline-now, 0), func() { p.onWaitTimer(gen) })
}

// onWaitTimer runs on the Clock's timer goroutine: it rejects (WaitTimeout)
// the queued tasks whose deadline has passed, re-arms for the new head, and
// delivers the rejections on this goroutine, outside mu.
func (p *Pool) onWaitTimer(gen uint64) {
	p.mu.Lock()
	if gen != p.waitGen {
		p.mu.Unlock()
		return // stopped (the queue emptied) or superseded
	}
	p.waitTimer = nil
	now := p.now()
	var expired taskList
	for t := p.queue.head; t != nil && t.deadline <= now; t = p.queue.head {
		p.unqueueLocked(t)
		if t.cell.CompareAndSwap(taskQueued, taskRejected) {
			expired.push(t)
		}
	}
	if h := p.queue.head; h != nil {
		p.armWaitTimerLocked(now, h.deadline)
	}
	p.mu.Unlock()
	p.decideAll(&expired, taskRejected, p.errWaitTimeout, bulkhead.CallRejected, bulkhead.WaitTimeout)
}

// decideAll delivers the outcome of every task of l (tasks whose CAS this
// goroutine won, unlinked from the queue), with err: it stops their context
// watches, publishes one event per task, then every outcome, then runs
// their callbacks. Publishing them all first means no Future of the batch
// waits for the callbacks of another.
func (p *Pool) decideAll(l *taskList, state uint32, err error, event bulkhead.EventType, reason bulkhead.Reason) {
	if l.n == 0 {
		return
	}
	for t := l.head; t != nil; t = t.next {
		if t.stop != nil {
			t.stop()
			t.stop = nil
		}
		t.err = err
	}
	d := &delivery{events: l.n, event: event, reason: reason, state: state, decided: *l}
	if event == bulkhead.CallRejected && p.events.Active() {
		d.waits = p.waitsOf(l)
	}
	*l = taskList{}
	p.deliver(d)
}
