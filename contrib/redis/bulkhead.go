package redis

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/publish"
)

// Bulkhead is a bulkhead.Bulkhead whose permits are leases in Redis, shared
// by every process that uses the same name and Store.KeyPrefix.
//
// Invariants, all guarded by mu:
//   - a Permit is in exactly one place: the queue (stWaiting), the FailOver
//     semaphore (stLocal), the held list (stHeld), or nowhere (stDone).
//     The Permits in stLocal are the keys of localWaiting.
//   - only the goroutine that moves a Permit out of stWaiting or stLocal
//     decides its outcome (Grant or Reject of its Resolver); the Resolver's
//     CAS decides against Cancel, whose withdraw runs under mu too.
//   - a lease of a Permit that is not stHeld is given back by id (releases),
//     a ticket by id (withdrawals): ids are never reused, and both scripts
//     are no-ops for ids Redis does not have, so an outcome lost in a failed
//     round trip is cleaned up by sending the id again.
//   - the queue is in arrival order, which is ticket order: tickets of one
//     process are taken in one round trip at a time, in queue order.
//
// Callbacks (OnDone of the Acquisitions) and event listeners never run
// under mu: grants decided by a round trip run on the Store's delivery
// goroutine, timeouts on the Clock's timer goroutine, local grants on the
// goroutine that gave back the local permit.
type Bulkhead struct {
	name  string
	cfg   Config
	s     *Store
	keys  keys
	local *bulkhead.Semaphore // FailOver only
	epoch time.Time
	pub   publish.Listeners[bulkhead.Event]

	// errp holds the bulkhead's rejection errors, made at its first
	// rejection (errs): an idle bulkhead of a Registry does not carry them.
	errp atomic.Pointer[bulkheadErrors]

	mu          sync.Mutex
	qhead       *Permit // waiting for Redis, oldest first
	qtail       *Permit
	fresh       int     // queued Permits without a ticket
	ticketed    int     // queued Permits with a ticket
	hhead       *Permit // holding a permit, oldest grant first
	htail       *Permit
	held        int
	releases    []uint64 // lease ids to give back
	withdrawals []uint64 // ticket ids to withdraw
	wake        bool     // ask Redis for the waiters' turn
	refresh     bool     // the stored limit changed: one round trip to read it
	limit       int      // the fleet limit as of the last round trip
	timer       bulkhead.Timer
	timerGen    uint64
	fleetHeld   int // as of the last round trip
	fleetQueued int
	leasesLost  int
	restored    int
	closed      bool
	// finishing: the lease ids of the permits a FinishCall or Release has
	// taken out of the held list and not yet queued in releases (it
	// publishes CallFinished in between, without the lock).
	finishing []uint64
	// localWaiting: the Permits in stLocal (waitLocalLocked), which Close
	// rejects with the queued ones.
	localWaiting map[*Permit]struct{}
	// retired: evicted from its Registry (retire). It admits nothing more;
	// the Store drops it once it owes Redis nothing.
	retired bool
}

// NewBulkhead returns the fleet bulkhead named name on s. It fails with a
// *bulkhead.ConfigError if cfg is invalid, and with an error if name is
// empty, contains '{' or '}', or is already used on s. It does no I/O: use
// Check to find wrong credentials or keys of another type at start-up.
func NewBulkhead(s *Store, name string, cfg Config) (*Bulkhead, error) {
	if s == nil {
		return nil, fmt.Errorf("redis: NewBulkhead(%q): store must not be nil", name)
	}
	if name == "" {
		return nil, fmt.Errorf("redis: NewBulkhead: name must not be empty")
	}
	if err := cfg.validateFor(name); err != nil {
		return nil, err
	}
	if containsBrace(name) {
		return nil, fmt.Errorf("redis: NewBulkhead(%q): name must not contain '{' or '}' (they delimit the hash tag of its keys)", name)
	}
	b := &Bulkhead{
		name: name, cfg: cfg, s: s, keys: newKeys(s.cfg.KeyPrefix, name),
		epoch: s.cfg.Clock.Now(), limit: cfg.MaxConcurrentCalls,
	}
	if cfg.Unreachable == FailOver {
		lc := cfg.Config
		lc.MaxConcurrentCalls = cfg.localLimit()
		local, err := bulkhead.New(name, lc, bulkhead.WithClock(s.cfg.Clock))
		if err != nil {
			return nil, err
		}
		b.local = local
	}
	if err := s.add(b); err != nil {
		return nil, err
	}
	return b, nil
}

// bulkheadErrors are the errors a bulkhead rejects with, made once so that
// a rejection does not allocate.
type bulkheadErrors struct {
	waitTimeout, noWait, queueFull error
	unavailable, closed, evicted   error
}

// errs returns the bulkhead's rejection errors, making them at the first
// call (a lost race makes them twice; either set is right).
func (b *Bulkhead) errs() *bulkheadErrors {
	if e := b.errp.Load(); e != nil {
		return e
	}
	name := b.name
	e := &bulkheadErrors{
		waitTimeout: &bulkhead.FullError{Name: name, Reason: bulkhead.WaitTimeout},
		noWait:      &bulkhead.FullError{Name: name, Reason: bulkhead.NoWait},
		queueFull:   &bulkhead.FullError{Name: name, Reason: bulkhead.QueueFull},
		unavailable: &StoreError{Name: name, Unreachable: true, Err: fmt.Errorf("no answer within %v, or the connection failed", b.s.cfg.Timeout)},
		closed:      fmt.Errorf("redis bulkhead %q: %w", name, ErrClosed),
		evicted:     fmt.Errorf("redis bulkhead %q: evicted from its Registry as idle (acquire through Registry.Acquire or Get): %w", name, ErrClosed),
	}
	if b.errp.CompareAndSwap(nil, e) {
		return e
	}
	return b.errp.Load()
}

// unavailable is the error of a call rejected while Redis is away: it
// names what the round trip that found it away said, if known.
func (b *Bulkhead) unavailable() error {
	if c := b.s.cause.Load(); c != nil {
		return &StoreError{Name: b.name, Unreachable: true, Err: c.err}
	}
	return b.errs().unavailable
}

func containsBrace(s string) bool {
	for _, r := range s {
		if r == '{' || r == '}' {
			return true
		}
	}
	return false
}

// Name returns the bulkhead's name.
func (b *Bulkhead) Name() string { return b.name }

// Config returns the configuration, with MaxConcurrentCalls the fleet
// limit as of the last round trip (the one stored by ChangeConfig, if any).
func (b *Bulkhead) Config() Config {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.cfg
	c.MaxConcurrentCalls = b.limit
	return c
}

// AcquirePermissionAsync requests a permit without blocking and without a
// round trip on the calling goroutine: the request is a record in this
// process that the Store's dispatcher sends to Redis with every other
// request of the moment, in one round trip. It is granted when a lease is
// taken in Redis, in fleet-wide ticket order; rejected with a
// *bulkhead.FullError (NoWait, QueueFull, WaitTimeout) as a Semaphore
// would, or with a *StoreError while Redis is unreachable (FailClosed);
// or withdrawn by Cancel. The permit is given back with FinishCall or
// ReleasePermission; LeaseOf returns its Lease.
func (b *Bulkhead) AcquirePermissionAsync() *bulkhead.Acquisition { return b.acquire(false).a }

// Acquire is AcquirePermissionAsync returning the typed request, whose
// Lease, Finish and Release refer to this permit. Its permit is given back
// only by its own Finish or Release: FinishCall and ReleasePermission
// never choose it, so the two styles may be mixed in one process.
func (b *Bulkhead) Acquire() *Permit { return b.acquire(true) }

func (b *Bulkhead) acquire(typed bool) *Permit {
	p := &Permit{b: b, typed: typed}
	p.a, p.r = bulkhead.PendingAcquisition(p.withdraw)
	// CallCancelled is published by the first callback rather than by
	// withdraw: a listener that calls runtime.Goexit then ends the goroutine
	// of Cancel with the Acquisition's other callbacks handed to a fresh
	// goroutine (see Acquisition.OnDone), not left unrun.
	p.a.OnDone(p.done)
	b.mu.Lock()
	switch {
	case b.closed || b.retired:
		p.state = stDone
		err := b.errs().closed
		if !b.closed {
			err = b.errs().evicted
		}
		b.mu.Unlock()
		b.reject(p, err, bulkhead.Unavailable)
		return p
	case b.s.down.Load():
		if err := b.s.refusalError(b.name); err != nil {
			p.state = stDone
			b.mu.Unlock()
			b.reject(p, err, bulkhead.Unavailable)
			return p
		}
		if b.local != nil {
			b.waitLocalLocked(p)
			p.queuedAt, p.queued = b.sinceEpoch(), true
			b.mu.Unlock()
			b.acquireLocal(p)
			return p
		}
		p.state = stDone
		b.mu.Unlock()
		b.reject(p, b.unavailable(), bulkhead.Unavailable)
		return p
	case b.cfg.MaxWaitDuration > 0 && b.ticketed >= b.cfg.MaxQueuedCalls:
		p.state = stDone
		b.mu.Unlock()
		b.reject(p, b.errs().queueFull, bulkhead.QueueFull)
		return p
	}
	p.n = b.s.nextID.Add(1)
	p.queuedAt, p.queued = b.sinceEpoch(), true
	if b.cfg.MaxWaitDuration > 0 {
		p.at = addSaturating(p.queuedAt, b.cfg.MaxWaitDuration)
	}
	b.linkQueueLocked(p)
	if p.deadline() > 0 && b.timer == nil {
		b.armTimerLocked(p.deadline())
	}
	b.mu.Unlock()
	b.s.kick()
	return p
}

// ReleasePermission gives back a permit whose call did not run (no event).
// The lease leaves Redis with the next round trip of this process: at once
// if calls wait for it (here, or in the fleet as of the last round trip),
// otherwise within releaseLinger (1ms), so that a release and the next
// acquisition share one round trip. It gives back the permit of the oldest
// grant this process still holds among those of AcquirePermissionAsync,
// since the Bulkhead interface does not say which (a Permit of Acquire is
// given back only by its own Finish or Release). It panics, naming the
// bulkhead, if this process holds none. Use Permit.Release to give back a
// given one.
func (b *Bulkhead) ReleasePermission() { b.giveBack(nil, false) }

// FinishCall gives back a permit whose call ran (CallFinished event), as
// ReleasePermission chooses it (never a Permit of Acquire). Use
// Permit.Finish to give back a given one.
func (b *Bulkhead) FinishCall() { b.giveBack(nil, true) }

// LeaseOf returns the lease granted to a, an Acquisition of b that is
// still held. Through the Bulkhead interface, permits of one process are
// interchangeable: FinishCall gives back the oldest grant, so LeaseOf is
// exact for calls that finish in the order they were granted; use Acquire
// and Permit when calls overlap and the token matters. It looks through
// the permits this process holds on b (at most the fleet limit).
func (b *Bulkhead) LeaseOf(a *bulkhead.Acquisition) (Lease, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for p := b.hhead; p != nil; p = p.next { // the held list: at most the fleet limit
		if p.a == a {
			if p.isLocal {
				return Lease{}, false
			}
			return Lease{Bulkhead: b.name, ID: b.s.id(p.n), Token: p.seq}, true
		}
	}
	return Lease{}, false
}

// LeaseOf returns the lease of a, an Acquisition returned by bh's
// AcquirePermissionAsync, if bh is a fleet Bulkhead (or wraps one and
// implements LeaseOf itself). For a caller that only has the
// bulkhead.Bulkhead interface.
func LeaseOf(bh bulkhead.Bulkhead, a *bulkhead.Acquisition) (Lease, bool) {
	if l, ok := bh.(interface {
		LeaseOf(*bulkhead.Acquisition) (Lease, bool)
	}); ok {
		return l.LeaseOf(a)
	}
	return Lease{}, false
}

// giveBack returns p's permit (the oldest held one if p is nil).
func (b *Bulkhead) giveBack(p *Permit, finished bool) {
	// Only a Permit says which call finished: a bare FinishCall gives back
	// the oldest grant, whose duration is not the finishing call's.
	identified := p != nil
	b.mu.Lock()
	if p == nil {
		// The oldest grant of AcquirePermissionAsync already delivered: a
		// grant on its way to its callbacks belongs to nobody yet (and if
		// Cancel wins its race, the delivery gives that very permit back),
		// and a Permit of Acquire belongs to its own Finish and Release.
		for p = b.hhead; p != nil && (p.typed || !p.a.Granted()); p = p.next {
		}
	}
	if p == nil || p.state != stHeld {
		closed := b.closed
		b.mu.Unlock()
		if closed {
			return // Close gave every lease back
		}
		panic(fmt.Sprintf("redis bulkhead %q: released a permit that is not held (more releases than grants)", b.name))
	}
	b.unlinkHeldLocked(p)
	p.state = stDone
	isLocal := p.isLocal
	if !isLocal {
		// Owed to Redis from now on, though queued only below, after
		// CallFinished: a Close in between gives it back (close).
		b.finishing = append(b.finishing, p.n)
	}
	b.mu.Unlock()
	// CallFinished comes before the permit is handed on, so that it
	// precedes the CallPermitted of the call that gets it, as in a
	// Semaphore.
	if finished && b.pub.Active() {
		e := b.event(bulkhead.CallFinished, 0, 0)
		if identified {
			// Grant to finish, on the Store's Clock (p.grantedAt() is set
			// once, under mu, when the grant is decided).
			e.CallDuration = max(0, e.Time.Sub(b.epoch)-p.grantedAt())
		}
		b.pub.Publish(e)
	}
	if isLocal {
		b.local.ReleasePermission()
		return
	}
	b.mu.Lock()
	closed := b.closed
	if !closed { // else close took it from finishing and gave it back
		i := slices.Index(b.finishing, p.n)
		b.finishing = slices.Delete(b.finishing, i, i+1)
		b.releases = append(b.releases, p.n)
	}
	// Nobody known to wait: the release rides with the next round trip of
	// this process, at most releaseLinger later.
	urgent := b.fleetQueued > 0 || b.qhead != nil
	b.mu.Unlock()
	switch {
	case closed:
	case urgent:
		b.s.kick()
	default:
		b.s.kickSoon()
	}
}

// reject delivers a rejection on the calling goroutine. CallRejected is
// published before the callbacks run, as a Semaphore does (a Cancel that
// wins the race after it is followed by CallCancelled). If a listener calls
// runtime.Goexit, the rejection is delivered by a fresh goroutine.
func (b *Bulkhead) reject(p *Permit, err error, r bulkhead.Reason) {
	if p.a.Err() == bulkhead.ErrPending && b.pub.Active() {
		published := false
		defer func() {
			if !published {
				go p.r.Reject(err)
			}
		}()
		b.publish(bulkhead.CallRejected, r, b.waited(p))
		published = true
	}
	p.r.Reject(err)
}

// grant delivers a grant decided by this process on the calling goroutine;
// if Cancel won first, the permit is given back. CallPermitted is published
// before the callbacks run, as a Semaphore does; a Cancel that wins the
// race after it is followed by CallCancelled. If a listener calls
// runtime.Goexit, the grant is delivered by a fresh goroutine.
func (b *Bulkhead) grant(p *Permit) {
	if p.a.Err() == bulkhead.ErrPending && b.pub.Active() {
		published := false
		defer func() {
			if !published {
				go b.handOver(p)
			}
		}()
		b.publish(bulkhead.CallPermitted, 0, b.waited(p))
		published = true
	}
	b.handOver(p)
}

// handOver decides p's grant and runs its callbacks, or gives the permit
// back if Cancel came first.
func (b *Bulkhead) handOver(p *Permit) {
	if !p.r.Grant() {
		b.giveBack(p, false)
	}
}

// waited is Event.Wait of p's decision: from AcquirePermissionAsync to
// now, for a call that was queued (every call decided by a round trip, a
// timer or the FailOver semaphore: a fleet call waits at least one round
// trip), zero for one decided at once (closed, Redis away or refusing, the
// process's queue full).
func (b *Bulkhead) waited(p *Permit) time.Duration {
	if !p.queued {
		return 0
	}
	return max(0, b.sinceEpoch()-p.queuedAt)
}

// OnEvent registers f to receive the events of this bulkhead in this
// process and returns a func that unregisters it. Events are the core's:
// CallPermitted (before the grant's callbacks run), CallRejected,
// CallFinished, CallCancelled. A CallRejected's Reason is NoWait,
// QueueFull or WaitTimeout as for a Semaphore, and bulkhead.Unavailable
// for the fleet's own rejections (a *StoreError matching ErrUnavailable
// or ErrRefused; ErrClosed, also for a bulkhead evicted from its
// Registry), so that the exporters count them as reason="unavailable".
// Event.Wait of a CallPermitted or CallRejected is the time from
// AcquirePermissionAsync to the decision on the Store's Clock for every
// call that was not decided at once (waited). Listeners run synchronously
// on the goroutine that caused the event, never under a lock; a panicking
// listener is recovered and ignored. The events of calls decided by a
// round trip run on the Store's delivery goroutine: to close the Store
// from a listener, call go s.Close() (see Store.Close).
func (b *Bulkhead) OnEvent(f func(bulkhead.Event)) (remove func()) {
	if f == nil {
		panic("redis: OnEvent called with a nil listener")
	}
	return b.pub.Add(f)
}

func (b *Bulkhead) publish(t bulkhead.EventType, r bulkhead.Reason, wait time.Duration) {
	if b.pub.Active() {
		b.pub.Publish(b.event(t, r, wait))
	}
}

func (b *Bulkhead) event(t bulkhead.EventType, r bulkhead.Reason, wait time.Duration) bulkhead.Event {
	return bulkhead.Event{Type: t, Name: b.name, Time: b.s.cfg.Clock.Now(), Reason: r, Wait: wait}
}

// retire takes an evicted bulkhead out of service: it admits nothing more,
// its name is free on the Store for a new bulkhead, and the Store drops it
// once the releases and withdrawals it still owes Redis are sent (collect).
func (b *Bulkhead) retire() {
	b.mu.Lock()
	b.retired = true
	b.mu.Unlock()
	b.s.retire(b)
}

var _ bulkhead.Bulkhead = (*Bulkhead)(nil)
