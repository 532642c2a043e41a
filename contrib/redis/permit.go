package redis

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/catalog"
)

// permitState is where a Permit is; it is guarded by its Bulkhead's mu.
type permitState uint8

const (
	// stWaiting: in the bulkhead's queue, waiting for Redis: new (seq == 0,
	// never sent or sent without an answer yet) or holding the ticket seq.
	stWaiting permitState = iota
	// stLocal: waiting on the FailOver semaphore (Permit.local).
	stLocal
	// stHeld: holds a permit (a lease, or a local permit if isLocal) and is
	// linked in the bulkhead's held list; its grant may not be delivered yet.
	stHeld
	// stDone: decided otherwise (cancelled, timed out, rejected) or given
	// back. Whatever Redis still has under its id is cleaned up by id.
	stDone
)

// Permit is one request for a permit of a fleet Bulkhead: its Acquisition,
// and once granted the Lease it holds. Finish and Release give back this
// permit (not just any permit of the process), so the lease a call reads
// with Lease is the one it holds until it gives it back.
type Permit struct {
	b *Bulkhead // nil for a keyed call rejected before it reached a bulkhead
	a *bulkhead.Acquisition
	r *bulkhead.Resolver
	// hold is the registry entry a keyed call holds (Registry.Acquire)
	// until its outcome is a rejection or, once granted, until Finish or
	// Release; whoever swaps it to nil ends the hold (leave).
	hold atomic.Pointer[catalog.Entry[*Bulkhead]]
	// queuedAt is when the call was queued in this process (offset from
	// b.epoch, on the Store's Clock), for Event.Wait; written before the
	// Permit is linked in the queue, read by whoever decides it.
	queuedAt time.Duration
	// Fields below are guarded by b.mu.
	n   uint64 // id number: the lease and ticket id is b.s.id(n)
	seq int64  // the ticket number while waiting, the fencing token once held
	// at is an offset from b.epoch, one field for two times that never
	// overlap (a Permit leaves the queue before it is held), which keeps a
	// waiting call's Permit in the 96-byte size class: in the queue
	// (stWaiting), the deadline (deadline, zero: the call may not wait);
	// held (stHeld), when the grant was decided (grantedAt), for the
	// call's duration.
	at       time.Duration
	prev     *Permit // in the queue or in the held list
	next     *Permit
	local    *bulkhead.Acquisition // stLocal: the FailOver acquisition
	state    permitState
	queued   bool // queuedAt is set: the call was not decided at once (written before the Permit is linked)
	inFlight bool // sent in the round trip under way
	isLocal  bool // stHeld: holds a FailOver permit, no lease
	lost     bool // stHeld: the lease expired in Redis and could not be restored
	typed    bool // made by Acquire: given back only by Finish or Release (immutable)
}

// deadline is when a waiting call times out (offset from b.epoch; zero:
// it may not wait). Only for a Permit in the queue.
func (p *Permit) deadline() time.Duration { return p.at }

// grantedAt is when a held call's grant was decided (offset from
// b.epoch). Only for a Permit that is held.
func (p *Permit) grantedAt() time.Duration { return p.at }

// Lease is the grant of one permit: its id in Redis and its fencing token.
// Tokens are unique and increase with every grant of a bulkhead, across the
// fleet, Redis restarts and failovers: the counter never issues a number
// below the server clock in microseconds, so a counter lost or rolled back
// resumes above every token issued before (unless a new primary's clock is
// behind the old one's by more than the failover took). With
// StoreConfig.WaitReplicas a delivered grant is also on the replicas.
type Lease struct {
	Bulkhead string // the bulkhead's name
	ID       string // the member of the leases sorted set
	Token    int64  // fencing token
}

// String renders the lease for logs.
func (l Lease) String() string {
	return fmt.Sprintf("lease %s of %q (token %d)", l.ID, l.Bulkhead, l.Token)
}

// Acquisition returns the future of this permit request.
func (p *Permit) Acquisition() *bulkhead.Acquisition { return p.a }

// Lease returns the lease granted to this request. ok is false while the
// request is pending, if it was not granted, after the permit was given
// back, and for a permit of the FailOver semaphore (which has no lease).
func (p *Permit) Lease() (l Lease, ok bool) {
	b := p.b
	if b == nil {
		return Lease{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.state != stHeld || p.isLocal {
		return Lease{}, false
	}
	return Lease{Bulkhead: b.name, ID: b.s.id(p.n), Token: p.seq}, true
}

// Lost reports whether the renewal loop found this permit's lease expired
// in Redis and could not add it back because the fleet's permits were
// taken: another call may hold it. A fenced resource refuses its token.
func (p *Permit) Lost() bool {
	if p.b == nil {
		return false
	}
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	return p.state == stHeld && p.lost
}

// Name is the name of the bulkhead this request went to: the bulkhead's,
// for a keyed call of a Registry the key or bulkhead.CatchAllName, and ""
// for a keyed call rejected before it reached a bulkhead.
func (p *Permit) Name() string {
	if p.b == nil {
		return ""
	}
	return p.b.name
}

// Finish gives back this permit after its call ran (CallFinished event),
// then ends a keyed call's hold on its bulkhead (Registry.Acquire). It
// panics, naming the bulkhead, if the permit is not held (not granted
// yet, or already given back).
func (p *Permit) Finish() { p.giveBack(true) }

// Release gives back this permit when its call did not run (no event). It
// panics like Finish.
func (p *Permit) Release() { p.giveBack(false) }

func (p *Permit) giveBack(finished bool) {
	if p.b == nil {
		panic(fmt.Sprintf("redis: Permit.Finish or Release of a call that was never granted: %v", p.a.Err()))
	}
	p.b.giveBack(p, finished)
	p.leave()
}

// withdraw runs on the goroutine whose Acquisition.Cancel won.
func (p *Permit) withdraw() {
	b := p.b
	b.mu.Lock()
	var local *bulkhead.Acquisition
	kick := false
	switch p.state {
	case stWaiting:
		b.unlinkQueueLocked(p)
		p.state = stDone
		if p.seq > 0 && !p.inFlight {
			b.withdrawals = append(b.withdrawals, p.n)
			kick = true
		}
	case stLocal:
		local = p.local
		b.leaveLocalLocked(p, stDone)
	case stHeld:
		// Granted but not delivered: the Grant that lost gives it back.
	}
	b.mu.Unlock()
	if local != nil {
		// A local grant that wins concurrently is given back by localDone.
		local.Cancel()
	}
	if kick {
		b.s.kick()
	}
}

// done is the first callback of every Acquisition of a Bulkhead: it
// publishes the CallCancelled of a withdrawn call, on the goroutine of
// Cancel, before the caller's callbacks run.
func (p *Permit) done(err error) {
	if err == bulkhead.ErrCancelled {
		p.b.publish(bulkhead.CallCancelled, 0, 0)
	}
}
