package bulkhead

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rxbulkhead/bulkhead/internal/lockhold"
	"github.com/rxbulkhead/bulkhead/internal/semhook"
)

// Semaphore is a bulkhead that limits concurrent calls with permits acquired
// asynchronously. Waiting calls are records in a bounded queue; waits are
// bounded by at most one timer per Semaphore.
//
// Invariants, guarded by mu but for the permit word (state, permits.go),
// which takes and gives permits without mu while nobody waits:
//   - the word holds the free and the held permits; free may be negative
//     after a shrinking ChangeConfig, until enough calls finish.
//   - a waiter is queued (linked) iff its Acquisition is pending: every
//     decision of a queued waiter (grant, expiry, eviction, Cancel) is its
//     CAS, taken under mu, and unlinks it in the same critical section.
//   - a permit is taken only when one is free and nobody waits (the word's
//     waitingBit, set before any call is queued), so queued calls are
//     never overtaken.
//   - a permit moves from the Semaphore to a waiter only when the waiter's
//     CAS (pending -> granted) succeeds, which it does for every linked
//     waiter (the CAS is kept so that the state word has one writer rule
//     for every owner; see mustDecide).
//
// A decision is visible at once: the deciding goroutine settles the
// Acquisition (knownBit, Done closed, a blocking waiter woken) in the same
// critical section as its CAS. Its events and callbacks follow after mu is
// released, on the same goroutine (see delivery.go).
//
// Callbacks and event listeners never run while mu is held.
type Semaphore struct {
	name   string
	clock  Clock
	events publisher

	// state is the permit word (permits.go): free and held permits and
	// whether a call waits, changed by CAS without mu while nobody waits.
	state atomic.Uint64

	mu  sync.Mutex
	cfg Config
	// wait holds everything a bulkhead needs once it has been full: the
	// queue, its timer and the prebuilt rejections. It is allocated on the
	// first wait or rejection, so that an idle bulkhead (most of a 500-partner
	// registry) stays small.
	wait *waitState
}

// New returns a Semaphore named name (used in errors, events and metrics).
// It fails with a *ConfigError if cfg is not valid, and with an error if name
// is empty or an option is invalid (a nil option: an error naming its index
// in opts).
func New(name string, cfg Config, opts ...Option) (*Semaphore, error) {
	if name == "" {
		return nil, errors.New("bulkhead: New: name must not be empty")
	}
	if err := cfg.validateFor(name); err != nil {
		return nil, err
	}
	o, err := newOptions(name, opts)
	if err != nil {
		return nil, err
	}
	s := &Semaphore{name: name, clock: o.clock, cfg: cfg}
	s.state.Store(wordFor(cfg.MaxConcurrentCalls))
	return s, nil
}

// waitLocked returns the wait state, allocating it on first use.
func (s *Semaphore) waitLocked() *waitState {
	if s.wait == nil {
		_, real := s.clock.(realClock)
		s.wait = &waitState{
			state:           &s.state,
			coarse:          real,
			epoch:           s.clock.Now(),
			rejectNoWait:    newDone(stateRejected, &FullError{Name: s.name, Reason: NoWait}),
			rejectQueueFull: newDone(stateRejected, &FullError{Name: s.name, Reason: QueueFull}),
			errWaitTimeout:  &FullError{Name: s.name, Reason: WaitTimeout},
			errEvicted:      &FullError{Name: s.name, Reason: Evicted},
		}
	}
	return s.wait
}

// Name returns the bulkhead's name.
func (s *Semaphore) Name() string { return s.name }

// Config returns the current configuration.
func (s *Semaphore) Config() Config {
	s.lock()
	defer s.unlock()
	return s.cfg
}

// Metrics is a snapshot of a Semaphore's state.
type Metrics struct {
	// AvailableConcurrentCalls is the number of free permits (never negative).
	AvailableConcurrentCalls int
	// MaxAllowedConcurrentCalls is the configured number of permits.
	MaxAllowedConcurrentCalls int
	// InFlightCalls is the number of permits held. After a shrinking
	// ChangeConfig it may exceed MaxAllowedConcurrentCalls for a while.
	InFlightCalls int
	// QueuedCalls is the number of calls waiting for a permit.
	QueuedCalls int
	// MaxQueuedCalls is the configured queue bound (Unbounded: no bound).
	MaxQueuedCalls int
	// ShadowMode is the configured Config.ShadowMode: the limit is
	// measured, not enforced.
	ShadowMode bool
}

// Metrics returns a consistent snapshot of the permits and the queue.
func (s *Semaphore) Metrics() Metrics {
	s.lock()
	defer s.unlock()
	// One reading of the word: free and held agree with each other, and,
	// if a call waits, with the queue (nothing but mu's holder moves the
	// word then).
	held := heldOf(s.state.Load())
	return Metrics{
		AvailableConcurrentCalls:  max(s.cfg.MaxConcurrentCalls-held, 0),
		MaxAllowedConcurrentCalls: s.cfg.MaxConcurrentCalls,
		InFlightCalls:             held,
		QueuedCalls:               s.queuedLocked(),
		MaxQueuedCalls:            s.cfg.MaxQueuedCalls,
		ShadowMode:                s.cfg.ShadowMode,
	}
}

func (s *Semaphore) queuedLocked() int {
	if s.wait == nil {
		return 0
	}
	return s.wait.queued
}

// OnEvent registers f to receive every event of this bulkhead and returns a
// func that unregisters it (idempotent). Listeners run synchronously on the
// goroutine that caused the event, never under the bulkhead's lock; a
// panicking listener is recovered and ignored. With no listener registered,
// events cost one atomic load. OnEvent panics if f is nil.
//
// The CallPermitted or CallRejected of a queued AcquirePermissionAsync is
// published by the goroutine that decided it, after the outcome is visible
// (Done closed) and before its OnDone callbacks run, so a goroutine waiting
// on Done may act on the outcome before the event is published. A blocking
// AcquirePermission publishes its own, on its goroutine, once it wakes.
//
// While a listener is registered the permit word's listenerBit sends every
// call past the inlined fast paths to a slow path that publishes (without
// taking the lock while nobody waits): a call that starts after OnEvent
// returns publishes its events; one that races OnEvent may not.
func (s *Semaphore) OnEvent(f func(Event)) (remove func()) {
	if f == nil {
		panic("bulkhead: OnEvent called with a nil listener")
	}
	// The list and listenerBit change in one critical section of mu, so
	// that the bit says whether a listener is registered at every release
	// of mu (permits.go).
	s.lock()
	rm := s.events.add(f)
	s.setListeningLocked(true)
	s.unlock()
	return func() {
		s.lock()
		rm() // idempotent
		s.setListeningLocked(s.events.active())
		s.unlock()
	}
}

// publish publishes an event if a listener is registered.
func (s *Semaphore) publish(t EventType, r Reason) {
	if s.events.active() {
		s.publishSlow(t, r)
	}
}

func (s *Semaphore) publishSlow(t EventType, r Reason) {
	s.events.publish(Event{Type: t, Name: s.name, Time: s.clock.Now(), Reason: r})
}

// TryAcquirePermission takes a permit if one is free and nobody is waiting,
// and reports whether it did. It never waits and never overtakes queued calls.
// It publishes CallPermitted or CallRejected (NoWait).
//
// Its fast path (a permit free, nobody waiting, no listener) is inlined
// at the call site (see takeOr).
func (s *Semaphore) TryAcquirePermission() bool { return takeOr(s, (*Semaphore).tryAcquireSlow) }

// The fast paths of TryAcquirePermission, AcquirePermissionAsync,
// ReleasePermission and FinishCall are one CAS of the permit word
// (takeQuiet, giveQuiet) and, when it says no, one call of the slow path.
// For Go's inliner (budget 80) a call of a function that is not inlined
// costs 57 and the CAS about 40, so "if s.takeQuiet() { ... }; return
// s.slow()" is not inlined; a call of a func parameter costs 17, so the
// fast path is written once, in the helpers below, with the slow path as
// a parameter, and each method passes its own slow path as a method
// expression: the method is inlined into its caller, and the slow path is
// an indirect call of a constant func, made only when the CAS said no.
// TestFastPathsInline fails if one of them stops being inlined.

// takeOr returns true if takeQuiet takes a permit, and slow(s) otherwise.
func takeOr(s *Semaphore, slow func(*Semaphore) bool) bool {
	return s.takeQuiet() || slow(s)
}

// takeOrAsync returns grantedAcquisition if takeQuiet takes a permit, and
// slow(s) otherwise.
func takeOrAsync(s *Semaphore, slow func(*Semaphore) *Acquisition) *Acquisition {
	if s.takeQuiet() {
		return grantedAcquisition
	}
	return slow(s)
}

// giveOr gives a permit back if giveQuiet can, and calls slow(s)
// otherwise.
func giveOr(s *Semaphore, slow func(*Semaphore)) {
	if !s.giveQuiet() {
		slow(s)
	}
}

// tryAcquireSlow is TryAcquirePermission once the quiet fast path said
// no: a retry without mu (a listener is registered, or the CAS lost a
// race), then under mu, where shadow mode and the rejection are decided.
func (s *Semaphore) tryAcquireSlow() bool {
	if s.tryTake() {
		if s.events.active() {
			s.publishSlow(CallPermitted, 0)
		}
		return true
	}
	s.lock()
	if s.tryTake() {
		s.unlock()
		if s.events.active() {
			s.publishSlow(CallPermitted, 0)
		}
		return true
	}
	if s.cfg.ShadowMode {
		s.shadowGrantLocked(false, 1) // mu released
		return true
	}
	s.unlock()
	s.publish(CallRejected, NoWait)
	return false
}

// AcquirePermissionAsync requests a permit without blocking.
//
// If a permit is free and nobody waits, it returns an Acquisition that is
// already granted, without allocating. If none is free it returns one that
// is already rejected when MaxWaitDuration is zero (NoWait) or the FIFO queue
// holds MaxQueuedCalls waiters (QueueFull); in LIFO order the oldest waiter
// is evicted instead (Evicted; its callbacks run on this goroutine before
// AcquirePermissionAsync returns; if one of them panics, the panic goes on
// out of AcquirePermissionAsync and the new call, which nobody will hold,
// is withdrawn first, with CallCancelled, so no permit is stranded).
// Otherwise the call is queued: the
// returned Acquisition is granted in queue order as permits come back,
// rejected with WaitTimeout after MaxWaitDuration, or withdrawn by its
// Cancel (see Acquisition.OnDone for where its callbacks run).
//
// Its fast path (a permit free, nobody waiting, no listener) is inlined
// at the call site (see takeOr).
func (s *Semaphore) AcquirePermissionAsync() *Acquisition {
	return takeOrAsync(s, (*Semaphore).acquireAsyncSlow)
}

// acquireAsyncSlow is AcquirePermissionAsync once the quiet fast path
// said no: a retry without mu (a listener is registered, or the CAS lost a
// race), then under mu, where the call is granted after all, rejected, or
// queued.
func (s *Semaphore) acquireAsyncSlow() *Acquisition {
	if s.tryTake() {
		if s.events.active() {
			s.publishSlow(CallPermitted, 0)
		}
		return grantedAcquisition
	}
	s.lock()
	if s.tryTake() {
		s.unlock()
		if s.events.active() {
			s.publishSlow(CallPermitted, 0)
		}
		return grantedAcquisition
	}
	if s.cfg.ShadowMode {
		s.shadowGrantLocked(true, 1) // mu released
		return grantedAcquisition
	}
	if r := s.rejectAtOnceLocked(); r != nil {
		return r // mu released
	}
	var d decidedList
	s.evictLocked(&d)
	if s.markWaitingLocked() { // a permit came back: no call was evicted (the queue was empty)
		s.unlock()
		if s.events.active() {
			s.publishSlow(CallPermitted, 0)
		}
		return grantedAcquisition
	}
	a := &Acquisition{owner: s}
	s.enqueueLocked(a)
	// A permit may be free behind a heavy waiter, or one that a LIFO
	// eviction just removed (weights.go): without weights, none is ever
	// free while a call waits, and this is one load of the word.
	var g decidedList
	s.passIfFreeLocked(&g)
	return s.unlockAndDeliverQueued(a, &g, &d)
}

// deliverEvictions delivers the outcomes of the waiters evicted to make
// room for newcomer, which is already queued. If a callback of an evicted
// waiter panics (or calls runtime.Goexit), the panic goes on to the caller
// of AcquirePermissionAsync, which then never returns newcomer: nobody
// could ever cancel it or give its permit back, so it is withdrawn first
// (see abandon).
func (s *Semaphore) deliverEvictions(d *decidedList, newcomer *Acquisition) {
	delivered := false
	defer func() {
		if !delivered {
			s.abandon(newcomer)
		}
	}()
	s.deliver(d)
	delivered = true
}

// abandon withdraws a queued Acquisition that will never be handed to
// anyone (it has no callbacks): Cancel, publishing CallCancelled; if a
// grant won the race first, the permit is given back (ReleasePermission,
// no event: the call never ran); an expiry or eviction that won needs
// nothing.
func (s *Semaphore) abandon(a *Acquisition) {
	if a.Cancel() {
		return
	}
	if a.cell.Load()&outcomeMask == stateGranted {
		s.releaseN(weightOf(a))
	}
}

// rejectAtOnceLocked returns the prebuilt rejection, after releasing mu and
// publishing CallRejected, if a call that finds no free permit cannot wait:
// MaxWaitDuration is zero, or the FIFO queue is full. It returns nil, with
// mu still held, if the call may queue.
func (s *Semaphore) rejectAtOnceLocked() *Acquisition {
	w := s.waitLocked()
	if s.cfg.MaxWaitDuration == 0 {
		s.unlock()
		s.publish(CallRejected, NoWait)
		return w.rejectNoWait
	}
	// MaxQueuedCalls >= 1 here: Validate refuses a wait without a queue.
	if s.cfg.QueueOrder == FIFO && w.queued >= s.cfg.MaxQueuedCalls {
		s.unlock()
		s.publish(CallRejected, QueueFull)
		return w.rejectQueueFull
	}
	return nil
}

// evictLocked makes room for a newcomer in a full LIFO queue by evicting the
// oldest waiters (Evicted), collecting the decided ones in d.
func (s *Semaphore) evictLocked(d *decidedList) {
	w := s.wait
	for w.queued >= s.cfg.MaxQueuedCalls {
		w.reject(w.head, w.errEvicted, d)
	}
}

// ReleasePermission gives back a permit whose call did not run. It publishes
// no event. If a call waits, the permit goes to it at once: its outcome is
// visible before ReleasePermission returns, and its callbacks have run or
// started (see Acquisition.OnDone). It panics, naming the bulkhead, if more
// permits are released than were acquired.
//
// Its fast path (a permit held, nobody waiting, no listener) is inlined at
// the call site (see takeOr).
func (s *Semaphore) ReleasePermission() { giveOr(s, (*Semaphore).releasePermissionSlow) }

// releasePermissionSlow is ReleasePermission once the quiet fast path
// said no.
func (s *Semaphore) releasePermissionSlow() { s.release(false, CallStart{}) }

// FinishCall gives back a permit whose call ran, and publishes CallFinished
// (without a CallDuration: see FinishCallStarted). It hands the permit on
// as ReleasePermission does. It panics, naming the bulkhead, if more
// permits are released than were acquired.
//
// Its fast path (a permit held, nobody waiting, no listener) is inlined at
// the call site (see takeOr): it is what an async call granted at once
// pays to end (its continuation ends with FinishCall).
func (s *Semaphore) FinishCall() { giveOr(s, (*Semaphore).finishCallSlow) }

// finishCallSlow is FinishCall once the quiet fast path said no.
func (s *Semaphore) finishCallSlow() { s.release(true, CallStart{}) }

// release gives a permit back; finished publishes CallFinished, measured
// from start (callduration.go). It is the slow path of FinishCall and
// ReleasePermission (a retry without mu, then releaseSlow) and the whole
// of FinishCallStarted.
func (s *Semaphore) release(finished bool, start CallStart) {
	if !s.tryGive() {
		s.releaseSlow(finished, start)
		return
	}
	if finished && s.events.active() {
		s.publishFinished(start)
	}
}

// releaseSlow is release when a call waits or the release may be one too
// many: under mu, where the permit goes to the next waiter.
func (s *Semaphore) releaseSlow(finished bool, start CallStart) {
	s.lock()
	if s.tryGive() { // nobody waits (any more) and a permit was held
		s.unlock()
		if finished && s.events.active() {
			s.publishFinished(start)
		}
		return
	}
	// A call waits (so only mu's holder moves the word), or none is held.
	// The permit goes to the next waiter in the same critical section, so
	// no observer (Metrics, TryAcquirePermission) sees it free while calls
	// wait, and the grant is visible (Done closed) before mu is released.
	var d decidedList
	switch v := s.state.Load(); {
	case v&waitingBit != 0 && freeOf(v) == 0 && heldOf(v) > 0 && s.wait.weighted == 0:
		// The common hand-off: the permit goes from its holder straight to
		// the next waiter, so held and free stay as they are and the word
		// is not written at all. (With a weighted waiter queued, the next
		// one may need more than one permit: the permit goes back to the
		// word and a pass hands it on.)
		s.handOffLocked(&d)
	case !s.giveLocked():
		s.unlock()
		panic(fmt.Sprintf("bulkhead %q: released more permits than were acquired", s.name))
	default: // after a shrink (free < 0 until enough calls finish), or nobody waits
		s.grantLocked(&d)
	}
	s.unlock()
	if finished {
		s.deliverFinished(&d, start)
		return
	}
	s.deliver(&d)
}

// ChangeConfig replaces the configuration of a live bulkhead. If cfg is not
// valid it returns a *ConfigError and keeps the old configuration.
//
// Growing MaxConcurrentCalls grants queued calls at once; their callbacks
// run as Acquisition.OnDone describes for a call that decides several
// outcomes. Shrinking never blocks: calls in flight above the new limit
// finish normally and their permits are absorbed. Queued calls keep their
// deadlines, and a queue bound below the current queue length rejects
// nobody already queued.
func (s *Semaphore) ChangeConfig(cfg Config) error {
	if err := cfg.validateFor(s.name); err != nil {
		return err
	}
	s.lock()
	if s.wait != nil && s.wait.unstamped != nil {
		s.wait.stampLocked(s.sinceEpochLocked()) // with the wait they were queued with
	}
	s.resizeLocked(s.cfg.MaxConcurrentCalls, cfg.MaxConcurrentCalls)
	s.cfg = cfg
	var d decidedList
	s.rejectTooHeavyLocked(&d) // weights.go: waiters the new limit can never grant
	if cfg.ShadowMode {
		s.grantAllLocked(&d) // shadow.go: nobody waits in shadow mode
	} else {
		s.grantLocked(&d)
	}
	s.unlock()
	s.deliver(&d)
	return nil
}

// grantLocked hands free permits to waiters in queue order. Each grant is
// decided by the waiter's CAS and settled (made visible) here, under mu;
// d collects the granted acquisitions whose events and callbacks are left
// to deliver.
func (s *Semaphore) grantLocked(d *decidedList) {
	w := s.wait
	if w == nil {
		return
	}
	h := semhook.Get() // nil but in tests
	if w.weighted != 0 {
		s.passLocked(h, d) // weights.go: bounded bypass
		w.stopTimerIfIdle()
		return
	}
	for w.head != nil && s.freeLocked() > 0 { // waitingBit is set: the word is mu's
		s.takeLocked()
		s.grantNextLocked(h, d)
	}
	w.stopTimerIfIdle()
}

// handOffLocked grants the next waiter the permit its caller gives back,
// which no other call could take meanwhile (waitingBit is set, no permit is
// free): the permit changes holders, so the word stays as it is.
func (s *Semaphore) handOffLocked(d *decidedList) {
	s.grantNextLocked(semhook.Get(), d)
	s.wait.stopTimerIfIdle()
}

// grantNextLocked decides, settles and collects in d the grant of the next
// waiter in queue order (there is one), whose permit the caller has
// counted.
func (s *Semaphore) grantNextLocked(h *semhook.Hooks, d *decidedList) {
	w := s.wait
	a := w.head
	if s.cfg.QueueOrder == LIFO {
		a = w.tail
	}
	w.unlink(a)
	h.BeforeDecision()
	a.mustDecide(stateGranted, nil)
	w.settled(a, d)
	h.AfterDecision(a)
}

// cancel is Acquisition.Cancel of a waiter of s, and the withdrawal of a
// blocking AcquirePermission whose ctx ended. Its decision, a CAS like
// every other, is taken under mu, as the grant, expiry and eviction of a
// queued waiter are: so a waiter is linked iff it is pending, and Metrics,
// the queue bound and the grant and expiry loops never count or meet a
// withdrawn one. (Taken first, as it once was, the CAS left a withdrawn
// waiter queued until Cancel got the lock: Metrics counted it, after
// another Cancel had already returned false for it.) A waiter already
// decided is refused without the lock. CallCancelled is published after
// mu is released, then the callbacks run (a blocking waiter has none).
func (s *Semaphore) cancel(a *Acquisition) bool {
	if a.cell.Load()&outcomeMask != statePending {
		return false
	}
	s.lock()
	if !a.decide(stateCancelled, nil) {
		s.unlock()
		return false
	}
	s.wait.unlink(a) // pending, so linked
	// A withdrawn heavy waiter may have held lighter ones back (weights.go):
	// they go now, their callbacks on a fresh goroutine (deliverAside), so
	// that Cancel runs no callback but the withdrawn call's.
	var d decidedList
	s.passIfFreeLocked(&d)
	s.wait.stopTimerIfIdle()
	blocking := a.isBlocking()
	if !blocking {
		a.settle()
	}
	s.unlock()
	if d.head != nil || d.wake != nil {
		s.deliverAside(&d)
	}
	if s.events.active() {
		s.announceCancelled(a, blocking)
	}
	if !blocking {
		a.runCallbacks()
	}
	return true
}

// announceCancelled publishes the CallCancelled of a withdrawn acquisition.
// If a listener calls runtime.Goexit, Cancel never gets to run a's
// callbacks, so a deferred call hands them to a fresh goroutine (a pooled
// blocking waiter has none: its own goroutine is the one ending).
func (s *Semaphore) announceCancelled(a *Acquisition, blocking bool) {
	published := false
	defer func() {
		if !published && !blocking {
			go a.runCallbacks()
		}
	}()
	s.publishSlow(CallCancelled, 0)
	published = true
}

// Compile-time checks.
var (
	_ Bulkhead         = (*Semaphore)(nil)
	_ BlockingBulkhead = (*Semaphore)(nil)
)

// lock and unlock take and release mu. Built with the tag bulkheadlockhold
// they also measure the hold (internal/lockhold, for the scale benchmark);
// without it they are mu.Lock and mu.Unlock.
func (s *Semaphore) lock() {
	s.mu.Lock()
	if lockhold.On {
		lockhold.Acquired()
	}
}

func (s *Semaphore) unlock() {
	if lockhold.On {
		lockhold.Released()
	}
	s.mu.Unlock()
}
