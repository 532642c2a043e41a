package bulkhead

import (
	"math"
	"sync/atomic"
	"time"
)

// relayStall is how long a callback of an expiry sweep may run before the
// callbacks after it stop waiting for it: the watchdog of a sweepRelay
// looks every relayStall and, if no callback has started since its last
// look, starts a fresh goroutine that carries on. A callback that blocks
// therefore delays the next one by at most two periods (plus scheduling).
const relayStall = time.Millisecond

// deliverSweep delivers the outcomes of one expiry sweep on the sweeping
// goroutine (the Clock's timer goroutine): it wakes the blocking waiters,
// publishes the events, then runs the callbacks in decision order. One
// acquisition with callbacks is run as deliver would run it; more go
// through a sweepRelay, so that a sweep of many waiters whose callbacks
// return quickly starts no goroutine per waiter.
func (s *Semaphore) deliverSweep(d *decidedList) {
	wakeBlocking(d)
	if d.head == nil {
		return
	}
	if s.events.active() {
		s.announce(d)
	}
	n := 0
	for a := d.head; a != nil && n < 2; a = a.next {
		if a.cell.HasCallbacks() { // frozen since settle, which this goroutine ran
			n++
		}
	}
	if n <= 1 {
		s.runDecided(d)
		return
	}
	var list []*Acquisition
	for a := d.head; a != nil; {
		n := a.next
		a.next = nil
		if a.cell.HasCallbacks() {
			list = append(list, a)
		}
		a = n
	}
	r := &sweepRelay{list: list}
	r.seen.Store(-1)
	t := time.AfterFunc(math.MaxInt64, r.check) // armed for real once stored
	r.watchdog.Store(t)
	t.Reset(relayStall)
	w := s.wait
	gen, ok, full, _ := w.inline.enter()
	if !ok {
		if full {
			w.inline.newGeneration(gen)
		}
		go r.run()
		return
	}
	defer w.inline.leave(gen)
	r.run()
}

// sweepRelay runs the callbacks of the acquisitions in list, each once, in
// list order of start. Runners claim the next index with one atomic add, so
// any number of goroutines may run the list at once: the sweeping goroutine
// first, then one more each time the watchdog finds that no callback has
// started for a whole relayStall (the ones running are blocked), or when a
// runner's callback panics or calls runtime.Goexit (a fresh goroutine
// carries on, and the panic goes on on the runner's goroutine).
type sweepRelay struct {
	list []*Acquisition // list[i] is cleared by the runner that claims i
	next atomic.Int64   // index of the next acquisition to claim
	seen atomic.Int64   // next as the watchdog saw it last (-1: not yet)
	// watchdog is stored before it is armed for relayStall, and before any
	// runner starts.
	watchdog atomic.Pointer[time.Timer]
}

// run claims and runs callbacks until the list is exhausted.
func (r *sweepRelay) run() {
	finished := false
	defer func() {
		if !finished {
			go r.run() // a callback panicked or called Goexit: carry on elsewhere
		}
	}()
	for {
		i := r.next.Add(1) - 1
		if i >= int64(len(r.list)) {
			if i == int64(len(r.list)) {
				r.watchdog.Load().Stop() // the one runner that ran off the end
			}
			finished = true
			return
		}
		a := r.list[i]
		r.list[i] = nil
		a.runCallbacks()
	}
}

// check is the watchdog, on the timer's goroutine: if no callback started
// since its last look, that goroutine becomes a runner too; either way it
// looks again after relayStall while callbacks are left to start.
func (r *sweepRelay) check() {
	p := r.next.Load()
	if p >= int64(len(r.list)) {
		return
	}
	t := r.watchdog.Load() // stored before the Reset that armed it
	stalled := r.seen.Swap(p) == p
	t.Reset(relayStall)
	if stalled {
		r.run()
	}
}
