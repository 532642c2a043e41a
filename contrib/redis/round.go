package redis

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/rxbulkhead/bulkhead"
)

// maxNewPerRound bounds the new requests of one bulkhead in one round trip;
// the rest go in the next one, at once.
const maxNewPerRound = 512

// work is what one round trip carries for one bulkhead. Its Permits are
// marked inFlight until apply or fail.
type work struct {
	b     *Bulkhead
	reqs  []*Permit
	rel   []uint64
	wd    []uint64
	args  []any
	more  bool // collect left new requests for the next round
	reply []int64
	err   error
}

// collect takes the bulkhead's pending work for one round trip, or returns
// nil if there is none. Waiters with a ticket are sent only when woken
// (a release notification, the poll timer), and only the oldest
// MaxConcurrentCalls of them: a younger one cannot be among the first free
// tickets of the fleet.
//
// gone reports a retired bulkhead that owes Redis nothing more: the Store
// drops it.
func (b *Bulkhead) collect() (w *work, gone bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wake && b.ticketed == 0 {
		b.wake = false
	}
	if b.retired && len(b.releases) == 0 && len(b.withdrawals) == 0 && len(b.finishing) == 0 {
		// Evicted with nothing held or queued: nothing will be.
		return nil, !b.closed
	}
	if b.closed || (len(b.releases) == 0 && len(b.withdrawals) == 0 && !b.wake && b.fresh == 0 && !b.refresh) {
		return nil, false
	}
	b.refresh = false
	w = &work{b: b, rel: b.releases, wd: b.withdrawals}
	b.releases, b.withdrawals = nil, nil
	wake := b.wake
	b.wake = false
	var kinds []byte
	tickets, fresh := 0, 0
	for p := b.qhead; p != nil; p = p.next {
		if p.inFlight {
			continue
		}
		switch {
		case p.seq > 0 && wake && tickets < b.limit:
			tickets++
			kinds = append(kinds, 'w')
		case p.seq == 0 && fresh < maxNewPerRound:
			fresh++
			if p.deadline() > 0 {
				kinds = append(kinds, 'n')
			} else {
				kinds = append(kinds, 't')
			}
		case p.seq == 0:
			w.more = true
			continue
		default:
			continue
		}
		p.inFlight = true
		w.reqs = append(w.reqs, p)
	}
	room := -1 // Unbounded
	if b.cfg.MaxQueuedCalls != bulkhead.Unbounded {
		room = max(0, b.cfg.MaxQueuedCalls-b.ticketed)
	}
	s := b.s
	w.args = make([]any, 0, 8+len(w.rel)+len(w.wd)+2*len(w.reqs))
	w.args = append(w.args, b.cfg.MaxConcurrentCalls, s.cfg.LeaseTTL.Milliseconds(), s.cfg.TicketTTL.Milliseconds(),
		b.keys.channel, b.name, len(w.rel), len(w.wd), room)
	for _, n := range w.rel {
		w.args = append(w.args, s.id(n))
	}
	for _, n := range w.wd {
		w.args = append(w.args, s.id(n))
	}
	for i, p := range w.reqs {
		w.args = append(w.args, s.id(p.n), kindArg[kinds[i]])
	}
	return w, false
}

var kindArg = map[byte]string{'w': "w", 'n': "n", 't': "t"}

// apply takes the outcome of a round trip and delivers it on the delivery
// goroutine. It reports whether more work is left at once.
func (b *Bulkhead) apply(w *work) bool {
	if len(w.reply) != 3+2*len(w.reqs) {
		w.err = errBadReply(len(w.reply), 3+2*len(w.reqs))
		b.fail(w, w.err)
		return false
	}
	var out []delivery
	b.mu.Lock()
	b.fleetHeld, b.fleetQueued = int(w.reply[0]), int(w.reply[1])
	changed := b.setLimitLocked(int(w.reply[2]))
	for i, p := range w.reqs {
		code, v := w.reply[3+2*i], w.reply[4+2*i]
		p.inFlight = false
		if p.state != stWaiting {
			// Decided meanwhile (Cancel, timeout, Close): give back by id
			// what Redis just gave it.
			switch code {
			case codeGranted:
				b.releases = append(b.releases, p.n)
			case codeQueued, codeWaiting:
				b.withdrawals = append(b.withdrawals, p.n)
			}
			continue
		}
		switch code {
		case codeGranted:
			b.unlinkQueueLocked(p)
			p.seq = v
			b.linkHeldLocked(p)
			out = append(out, delivery{p: p})
		case codeQueued:
			if p.seq == 0 {
				b.fresh--
				b.ticketed++
			}
			p.seq = v
		case codeWaiting:
		case codeNoWait, codeQueueFull:
			b.unlinkQueueLocked(p)
			p.state = stDone
			err, r := b.errs().noWait, bulkhead.NoWait
			if code == codeQueueFull {
				err, r = b.errs().queueFull, bulkhead.QueueFull
			}
			out = append(out, delivery{p: p, err: err, reason: r})
		}
	}
	more := w.more || len(b.releases) > 0 || len(b.withdrawals) > 0
	b.mu.Unlock()
	if changed {
		b.limitChanged()
	}
	b.s.deliveries.push(out)
	return more
}

// fail handles a round trip that did not decide: Redis unreachable (the
// Policy applies to every queued call), or Redis refused (the calls of this
// round are rejected with a *StoreError naming what it said).
func (b *Bulkhead) fail(w *work, err error) {
	down := unreachable(err)
	b.mu.Lock()
	if down {
		// Whatever the round did in Redis is undone by id later: both
		// scripts are no-ops for ids Redis does not have.
		b.releases = append(b.releases, w.rel...)
		b.withdrawals = append(b.withdrawals, w.wd...)
	}
	var out []delivery
	serr := &StoreError{Name: b.name, Unreachable: down, Err: err}
	for _, p := range w.reqs {
		p.inFlight = false
		if down {
			b.releases = append(b.releases, p.n)
			b.withdrawals = append(b.withdrawals, p.n)
		}
		if p.state != stWaiting || down {
			continue // down: storeDown handles every queued Permit
		}
		b.unlinkQueueLocked(p)
		p.state = stDone
		out = append(out, delivery{p: p, err: serr, reason: bulkhead.Unavailable})
	}
	b.mu.Unlock()
	b.s.deliveries.push(out)
}

// storeDown applies the Policy to every call queued for Redis: FailClosed
// rejects them (*StoreError, ErrUnavailable), FailOver moves them to the
// local semaphore. With a refusal (the refused state) every call is
// rejected with it instead, whatever the Policy. Their tickets are
// withdrawn once Redis is back.
func (b *Bulkhead) storeDown(refusal error) {
	local := b.local
	var rerr error
	if refusal != nil {
		local = nil
		rerr = &StoreError{Name: b.name, Err: refusal}
	}
	b.mu.Lock()
	var moved []*Permit
	for p := b.qhead; p != nil; p = b.qhead {
		b.unlinkQueueLocked(p)
		if p.seq > 0 || p.inFlight {
			b.withdrawals = append(b.withdrawals, p.n)
		}
		if p.inFlight {
			b.releases = append(b.releases, p.n)
			p.inFlight = false
		}
		if local != nil {
			b.waitLocalLocked(p)
		} else {
			p.state = stDone
		}
		moved = append(moved, p)
	}
	b.mu.Unlock()
	for _, p := range moved {
		switch {
		case local != nil:
			b.acquireLocal(p)
		case rerr != nil:
			b.reject(p, rerr, bulkhead.Unavailable)
		default:
			b.reject(p, b.unavailable(), bulkhead.Unavailable)
		}
	}
}

func (b *Bulkhead) setWake() {
	b.mu.Lock()
	b.wake = true
	b.mu.Unlock()
}

func (b *Bulkhead) setWakeIfWaiting() {
	b.mu.Lock()
	if b.ticketed > 0 {
		b.wake = true
	}
	b.mu.Unlock()
}

// close closes b for Store.Close: it takes every queued and held permit
// out of b and returns the work that gives their leases and tickets back
// (nil if there is nothing to give back), and then, which runs the user
// code of the closing (the local permits handed back, the rejections of
// the queued calls with ErrClosed) and must be called once, after close
// returned: Store.Close sends the work first, so that user code that
// calls Close again while then runs does not wait for itself.
func (b *Bulkhead) close() (w *work, then func()) {
	b.mu.Lock()
	b.closed = true
	var rejected []*Permit
	locals := 0
	for p := b.qhead; p != nil; p = b.qhead {
		b.unlinkQueueLocked(p)
		b.withdrawals = append(b.withdrawals, p.n)
		b.releases = append(b.releases, p.n)
		p.state = stDone
		rejected = append(rejected, p)
	}
	// The calls waiting on the FailOver semaphore, oldest first: their
	// local acquisitions are withdrawn before the local permits come back,
	// which would grant them (a grant that wins the race is given back by
	// localDone, which finds them no longer in stLocal).
	var waitingLocal []*Permit
	for p := range b.localWaiting {
		waitingLocal = append(waitingLocal, p)
	}
	slices.SortFunc(waitingLocal, func(x, y *Permit) int { return cmp.Compare(x.queuedAt, y.queuedAt) })
	var withdrawLocal []*bulkhead.Acquisition
	for _, p := range waitingLocal {
		b.leaveLocalLocked(p, stDone)
		if p.local != nil { // else acquireLocal withdraws it, finding p not in stLocal
			withdrawLocal = append(withdrawLocal, p.local)
		}
	}
	for p := b.hhead; p != nil; p = b.hhead {
		b.unlinkHeldLocked(p)
		p.state = stDone
		if p.isLocal {
			locals++
		} else {
			b.releases = append(b.releases, p.n)
		}
	}
	// Finished calls whose release is not queued yet (giveBack): their
	// Finish finds b closed and leaves the release to this give-back.
	b.releases = append(b.releases, b.finishing...)
	b.finishing = nil
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	w = &work{b: b, rel: b.releases, wd: b.withdrawals}
	b.releases, b.withdrawals = nil, nil
	b.mu.Unlock()
	then = func() {
		for _, la := range withdrawLocal {
			la.Cancel()
		}
		for range locals {
			b.local.ReleasePermission()
		}
		for _, p := range append(rejected, waitingLocal...) {
			b.reject(p, b.errs().closed, bulkhead.Unavailable)
		}
	}
	if len(w.rel) == 0 && len(w.wd) == 0 {
		return nil, then
	}
	s := b.s
	w.args = append(w.args, b.cfg.MaxConcurrentCalls, s.cfg.LeaseTTL.Milliseconds(), s.cfg.TicketTTL.Milliseconds(),
		b.keys.channel, b.name, len(w.rel), len(w.wd), -1)
	for _, n := range w.rel {
		w.args = append(w.args, s.id(n))
	}
	for _, n := range w.wd {
		w.args = append(w.args, s.id(n))
	}
	return w, then
}

type badReplyError struct{ got, want int }

func (e badReplyError) Error() string {
	return "unexpected reply of the round script: " + strconv.Itoa(e.got) + " values, want " + strconv.Itoa(e.want)
}

func errBadReply(got, want int) error { return badReplyError{got, want} }

// giveBackLate gives back by id, again, what an abandoned round trip that
// ran at last may have taken (bounded): the leases and tickets of reqs
// (none of them is held under those ids: fail handed them to the Policy)
// and the leases of renewed Permits that are no longer held. Ids are never
// reused, and both scripts are no-ops for ids Redis does not have.
func (b *Bulkhead) giveBackLate(reqs, renewed []*Permit) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range reqs {
		if p.state == stHeld && !p.isLocal {
			continue // granted since, under its id, by a later round trip
		}
		b.releases = append(b.releases, p.n)
		b.withdrawals = append(b.withdrawals, p.n)
	}
	for _, p := range renewed {
		if p.state != stHeld {
			b.releases = append(b.releases, p.n)
		}
	}
}
