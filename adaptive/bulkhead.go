package adaptive

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/nilcheck"
)

// Bulkhead is a *bulkhead.Semaphore whose MaxConcurrentCalls follows the
// partner: it times the calls, sums them up per window, gives each window to
// its Algorithm and applies the new limit with Semaphore.ChangeConfig.
// It implements bulkhead.Bulkhead, so every operator takes it as it is.
//
// There are two ways to make calls:
//
//   - Acquire and TryAcquire return a Call that knows its grant time; its
//     Finish measures the RTT exactly and classifies the call's error
//     (Config.IsOverload). Use them when you call the bulkhead yourself.
//   - The plain bulkhead.Bulkhead methods (AcquirePermissionAsync,
//     FinishCall, ReleasePermission), which the operators use. The
//     operators take each call's start right after its grant (StartCall)
//     and give it back (FinishCallStarted), which times the call exactly.
//     A bare FinishCall carries no per-call identity: it is matched with
//     the oldest grant still in flight, which makes a window's mean RTT
//     exact when calls finish in the order they started and nearly so
//     otherwise (see the accuracy note on grants). MarkOverload reports an
//     overload for them.
//
// Both may be mixed. No goroutine and no timer are started: windows close on
// the goroutine of the call that finishes them, and the time is read from
// the Clock given with WithClock.
//
// Invariants:
//   - mu guards the controller state (algorithm, limit, window, counters);
//     it is never held while calling a Semaphore method that can run
//     callbacks or publish events, so callbacks that the Semaphore runs
//     (grants delivered by FinishCall or ChangeConfig) and event listeners
//     may re-enter the Bulkhead. (A watching controller reads
//     Semaphore.Metrics under mu; see reconcileLocked.)
//   - inFlight counts the permits granted through this Bulkhead and not yet
//     given back; it is decremented before the permit goes back to the
//     Semaphore and incremented before the caller can see the grant (at
//     once, or before the proxy of a queued acquisition is granted), so it
//     is never negative; a give-back when it is 0 is an over-release (the
//     Semaphore panics) and counts nothing.
//   - the newest limit wins: every window stores its limit in desired, and
//     whoever wins the applying CAS applies desired until it stops changing,
//     so a ChangeConfig that re-enters (through a grant callback) or runs
//     concurrently never leaves an older limit in force.
//
// While a Bulkhead wraps a Semaphore it owns MaxConcurrentCalls; changing
// the other fields with Semaphore.ChangeConfig meanwhile is allowed, but a
// window closing at the same moment may write back the old values.
type Bulkhead struct {
	sem   *bulkhead.Semaphore
	clock bulkhead.Clock
	cfg   resolved
	epoch time.Time

	mu        sync.Mutex
	alg       Algorithm
	inFlight  int
	limit     float64 // the smoothed, clamped limit
	estimate  float64 // the algorithm's last output
	w         window
	plain     grants // grants of plain (or watched) calls in flight
	lastRTT   time.Duration
	lastMin   time.Duration // shortest RTT of the last window
	windows   int64
	rejected  int64
	overloads int64
	cutRef    float64       // the limit at cutRefAt: the bound of MaxCutPerSecond
	cutRefAt  time.Duration // when the current one-second period began
	floorAt   time.Duration // when the limit reached the floor; -1: not at it
	floorTime time.Duration // time at the floor before floorAt
	onFloor   func(FloorEvent)

	desired  atomic.Int64
	applying atomic.Bool
	// lastGrant is the newest plain grant's time, as an offset from epoch
	// plus one (callstart.Offset; 0: none yet), for StartCall. Written
	// under mu, never made smaller.
	lastGrant atomic.Int64

	// Set by Watch, before any event can arrive; read-only afterwards.
	watched bool
	stop    func()
	excess  int // under mu: permits counted but not held, at the last window (watch)
}

// New wraps sem with an adaptive limit. It fails with a *ConfigError if cfg
// is invalid, with an error naming a nil option or WithClock(nil), and
// panics if sem is nil. If the initial limit differs from
// sem's MaxConcurrentCalls, it is applied at once.
func New(sem *bulkhead.Semaphore, cfg Config, opts ...Option) (*Bulkhead, error) {
	b, err := newBulkhead(sem, cfg, opts)
	if err != nil {
		return nil, err
	}
	b.apply()
	return b, nil
}

// newBulkhead is New without applying the initial limit.
func newBulkhead(sem *bulkhead.Semaphore, cfg Config, opts []Option) (*Bulkhead, error) {
	if sem == nil {
		panic("adaptive: New called with a nil *bulkhead.Semaphore")
	}
	p, err := prepare(sem.Name(), cfg, opts)
	if err != nil {
		return nil, err
	}
	return p.build(sem), nil
}

// prepared is what a controller needs besides its semaphore: a config with
// its defaults, the options and the algorithm, all checked.
type prepared struct {
	r   resolved
	o   options
	alg Algorithm
}

// prepare checks cfg and opts and makes the algorithm for the bulkhead
// called name, before its semaphore is needed (Registry.Configure creates
// nothing for a config that fails here).
func prepare(name string, cfg Config, opts []Option) (prepared, error) {
	r, err := cfg.resolve()
	if err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			ce.Name = name
		}
		return prepared{}, err
	}
	o, err := newOptions(fmt.Sprintf("adaptive bulkhead %q", name), opts)
	if err != nil {
		return prepared{}, err
	}
	alg := r.newAlgorithm()
	if nilcheck.Is(alg) { // the nil interface, or a nil *Capacity in it
		return prepared{}, &ConfigError{Name: name, Field: "Algorithm", Value: alg, Rule: "must return an Algorithm (not nil, nor a nil pointer)"}
	}
	if f, ok := alg.(interface{ setFloor(int) }); ok {
		f.setFloor(r.min)
	}
	return prepared{r: r, o: o, alg: alg}, nil
}

// build makes the controller of sem, without applying the initial limit.
func (p prepared) build(sem *bulkhead.Semaphore) *Bulkhead {
	r := p.r
	initial := r.initial
	if initial == 0 {
		initial = sem.Config().MaxConcurrentCalls
	}
	initial = min(max(initial, r.min), r.max)
	b := &Bulkhead{sem: sem, clock: p.o.clock, cfg: r, epoch: p.o.clock.Now(), alg: p.alg, limit: float64(initial), estimate: float64(initial),
		cutRef: float64(initial), floorAt: -1, onFloor: p.o.onFloor}
	if initial == r.min {
		b.floorAt = 0
	}
	b.desired.Store(int64(initial))
	return b
}

// now is the clock's time as an offset from epoch.
func (b *Bulkhead) now() time.Duration { return b.clock.Now().Sub(b.epoch) }

// Name returns the semaphore's name.
func (b *Bulkhead) Name() string { return b.sem.Name() }

// Semaphore returns the wrapped semaphore.
func (b *Bulkhead) Semaphore() *bulkhead.Semaphore { return b.sem }

// Metrics returns the semaphore's metrics, so that testkit.CheckPermits and
// the collectors take a Bulkhead as they take a Semaphore.
func (b *Bulkhead) Metrics() bulkhead.Metrics { return b.sem.Metrics() }

// Stats is a snapshot of the controller.
type Stats struct {
	// Limit is the limit in force: the MaxConcurrentCalls the controller
	// applied last.
	Limit int
	// Estimate is the algorithm's last output, before the floor, the
	// ceiling and the smoothing.
	Estimate float64
	// RTT is the last window's mean RTT (0 before the first window).
	RTT time.Duration
	// InFlight is the number of calls holding a permit of this Bulkhead.
	InFlight int
	// Windows is the number of samples given to the algorithm.
	Windows int64
	// Rejected counts calls the semaphore rejected (no wait, queue full,
	// wait timeout, evicted) through this Bulkhead.
	Rejected int64
	// Overloads counts calls marked as overload.
	Overloads int64
	// AtFloor reports that the limit is at the floor (Config.Min).
	AtFloor bool
	// FloorTime is the total time the limit spent at the floor, up to
	// now.
	FloorTime time.Duration
}

// Stats returns a consistent snapshot of the controller.
func (b *Bulkhead) Stats() Stats {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	st := Stats{
		Limit: int(b.desired.Load()), Estimate: b.estimate, RTT: b.lastRTT, InFlight: b.inFlight,
		Windows: b.windows, Rejected: b.rejected, Overloads: b.overloads,
		AtFloor: b.floorAt >= 0, FloorTime: b.floorTime,
	}
	if st.AtFloor {
		st.FloorTime += max(0, now-b.floorAt)
	}
	return st
}

// AcquirePermissionAsync implements bulkhead.Bulkhead: it asks the
// semaphore and counts the grant or the rejection. An acquisition decided at
// once is returned as the semaphore made it (no allocation on the fast
// path). A queued one is returned behind a proxy Acquisition
// (bulkhead.PendingAcquisition) that the controller grants only after it
// counted the grant, so no caller can finish a call the controller has not
// yet seen start: the semaphore closes Done before it runs callbacks, so
// counting in a callback of its Acquisition would be too late. Cancel on the
// proxy cancels the queued acquisition; a grant that wins that race is
// given back with ReleasePermission. So a Cancel of the proxy that returns
// true leaves no permit to its caller, but the semaphore may show that
// permit held for a moment: it comes back on the goroutine that granted it,
// as soon as the grant's callback runs.
func (b *Bulkhead) AcquirePermissionAsync() *bulkhead.Acquisition {
	inner := b.sem.AcquirePermissionAsync()
	if b.watched {
		return inner
	}
	switch err := inner.Err(); {
	case err == nil:
		b.granted(true)
		return inner
	case errors.Is(err, bulkhead.ErrPending):
	default:
		b.countRejected()
		return inner
	}
	outer, r := bulkhead.PendingAcquisition(func() { inner.Cancel() })
	inner.OnDone(func(err error) {
		switch {
		case err == nil:
			b.granted(true)
			if !r.Grant() { // the proxy was cancelled first: nobody owns the permit
				b.ReleasePermission()
			}
		case errors.Is(err, bulkhead.ErrCancelled):
			// withdrawn through the proxy, which is already cancelled
		default:
			if errors.Is(err, bulkhead.ErrBulkheadFull) {
				b.countRejected()
			}
			r.Reject(err)
		}
	})
	return outer
}

// FinishCall implements bulkhead.Bulkhead: the permit of a call that ran
// comes back; its RTT is estimated (see Bulkhead).
func (b *Bulkhead) FinishCall() { b.finish(finishPlain, nil, bulkhead.CallStart{}) }

// finish is the one path by which the permit of a call that ran comes back
// (FinishCall, FinishCallStarted, Call.Finish): record, if not nil, puts
// its RTT in the window (see returned), an err that Config.IsOverload
// accepts marks the window as dropped, and start is the call's start for
// the CallDuration of its CallFinished event (zero: none). A watched
// bulkhead records nothing here: it learns the call from the Semaphore's
// events.
//
// User code runs on the way (IsOverload, the Algorithm's Update, the
// OnFloor listener): a panic in it goes on to the caller, but only after
// the controller counted the call back and the permit went back to the
// Semaphore, and with the limit applied, so no permit is lost.
func (b *Bulkhead) finish(record func(b *Bulkhead, now time.Duration), err error, start bulkhead.CallStart) {
	var changed bool
	defer func() {
		if changed {
			defer b.apply() // also if a grant callback run by the Semaphore panics
		}
		b.sem.FinishCallStarted(start)
	}()
	if b.watched {
		if err != nil && b.cfg.isOverload(err) {
			b.MarkOverload()
		}
		return
	}
	overload := false
	defer b.returned(record, &overload, &changed) // runs if IsOverload panics too
	overload = err != nil && b.cfg.isOverload(err)
}

// ReleasePermission implements bulkhead.Bulkhead: the permit of a call that
// did not run comes back (the semaphore publishes no event for it, so a
// watching controller learns it here).
func (b *Bulkhead) ReleasePermission() {
	var changed bool
	defer func() {
		if changed {
			defer b.apply()
		}
		b.sem.ReleasePermission()
	}()
	b.returned(popNewest, nil, &changed)
}

// MarkOverload records that a call failed because the partner is
// overloaded (a timeout, an HTTP 503...), for calls made through the plain
// methods; the current window is then a drop for the algorithm. Call it
// before FinishCall.
func (b *Bulkhead) MarkOverload() {
	b.mu.Lock()
	b.w.drops++
	b.overloads++
	b.mu.Unlock()
}

func (b *Bulkhead) countRejected() {
	b.mu.Lock()
	b.rejected++
	b.mu.Unlock()
}

// granted counts a grant and returns its time and the calls in flight,
// itself included (its level); the grant of a plain call is queued for
// matching (see grants).
func (b *Bulkhead) granted(plain bool) (time.Duration, int) {
	now := b.now()
	b.mu.Lock()
	b.inFlight++
	n := b.inFlight
	b.w.maxInFlight = max(b.w.maxInFlight, n)
	if plain {
		b.plain.push(now, n)
		if at := max(int64(now)+1, 1); at > b.lastGrant.Load() {
			b.lastGrant.Store(at)
		}
	}
	b.mu.Unlock()
	return now, n
}

// finishPlain records a plain call's RTT and level, matched with the
// oldest grant (see grants).
func finishPlain(b *Bulkhead, now time.Duration) {
	if g, ok := b.plain.popOldest(); ok {
		b.w.add(now - g.at)
		b.w.matched = true
		b.w.callInFlight = g.level
	}
}

// popNewest forgets the newest plain grant (a call that did not run).
func popNewest(b *Bulkhead, _ time.Duration) { b.plain.popNewest() }

// returned counts a permit coming back (record, if not nil, updates the
// window under mu; *overload, if overload is not nil, marks it as
// dropped), closes the window when it is due, and sets *changed if the
// limit changed. The caller then gives the permit back to the Semaphore
// and, deferred so that it happens even if a grant callback run by the
// Semaphore panics, calls apply. A panic in the Algorithm's Update or in
// the OnFloor listener leaves mu unlocked and *changed set as it stands.
func (b *Bulkhead) returned(record func(b *Bulkhead, now time.Duration), overload *bool, changed *bool) {
	now := b.now()
	var ev FloorEvent
	defer func() {
		if ev.Name != "" && b.onFloor != nil {
			b.onFloor(ev)
		}
	}()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inFlight == 0 {
		// Not watched: more permits back than were granted through this
		// Bulkhead (a Call finished twice), which the Semaphore reports
		// with a panic; the call never ran, so it is no sample. Watched: a
		// finish whose event was late, dropped as a release the
		// controller could not see (see reconcileLocked).
		if !b.watched {
			return
		}
	} else {
		b.inFlight--
	}
	if record != nil {
		record(b, now)
	}
	if overload != nil && *overload {
		b.w.drops++
		b.overloads++
	}
	*changed, ev = b.closeWindowLocked(now)
}

// closeWindowLocked turns the window into a sample if it is due (or the
// call into one, with Window.PerCall), updates the limit, and reports
// whether the applied limit changed, and the floor event to publish once
// mu is released (Name empty: none).
func (b *Bulkhead) closeWindowLocked(now time.Duration) (bool, FloorEvent) {
	w := &b.w
	n := w.n
	var s Sample
	if b.cfg.perCall {
		if n == 0 {
			return false, FloorEvent{}
		}
		s = w.sample()
		s.InFlight = max(1, w.callInFlight)
		// the window started at the previous sample (at 0, the
		// Bulkhead's start, for the first)
		s.Elapsed, s.PerCall = now-w.start, true
		if b.watched {
			b.reconcileLocked()
		}
	} else {
		elapsed := now - w.start
		due := max(b.cfg.minWindow, min(2*b.lastMin, b.cfg.maxWindow))
		if n == 0 || (elapsed < b.cfg.maxWindow && (n < b.cfg.minSamples || elapsed < due)) {
			return false, FloorEvent{}
		}
		if b.watched {
			b.reconcileLocked()
		}
		s = w.sample()
		s.Elapsed = elapsed
		if n < b.cfg.minSamples && b.cfg.discardShort {
			// Netflix's rule: a window with too few calls says nothing.
			b.lastMin = w.minRTT
			w.reset(now, b.inFlight)
			return false, FloorEvent{}
		}
	}
	b.lastRTT = s.RTT
	b.lastMin = w.minRTT
	b.windows++
	w.reset(now, b.inFlight)

	// User code: if Update panics, the window is spent and the limit stays
	// (returned unlocks mu on the way out).
	est := b.alg.Update(b.limit, s)
	if math.IsNaN(est) || math.IsInf(est, 0) {
		est = b.limit
	}
	b.estimate = est
	next := b.cfg.smoothing*b.limit + (1-b.cfg.smoothing)*est
	if now-b.cutRefAt >= time.Second {
		b.cutRef, b.cutRefAt = b.limit, now
	}
	next = max(next, b.cutRef*(1-b.cfg.maxCut))
	b.limit = min(max(next, float64(b.cfg.min)), float64(b.cfg.max))
	// float64(max) may round above max (math.MaxInt becomes 2^63, which no
	// int64 holds): a limit at the ceiling applies the int ceiling itself.
	applied := int64(b.cfg.max)
	if b.limit < float64(b.cfg.max) {
		applied = min(int64(math.Floor(b.limit)), applied)
	}
	ev := b.floorLocked(now, int(applied))
	if applied == b.desired.Load() {
		return false, ev
	}
	b.desired.Store(applied)
	return true, ev
}

// floorLocked keeps the time at the floor and returns the event of a
// limit that reaches or leaves it (Name empty: none).
func (b *Bulkhead) floorLocked(now time.Duration, applied int) FloorEvent {
	at := applied <= b.cfg.min
	switch {
	case at && b.floorAt < 0:
		b.floorAt = now
		return FloorEvent{Name: b.sem.Name(), AtFloor: true, Limit: applied, Time: b.epoch.Add(now)}
	case !at && b.floorAt >= 0:
		d := now - b.floorAt
		b.floorTime += d
		b.floorAt = -1
		return FloorEvent{Name: b.sem.Name(), AtFloor: false, Limit: applied, Time: b.epoch.Add(now), Duration: d}
	}
	return FloorEvent{}
}

// apply makes desired the semaphore's MaxConcurrentCalls. See the
// invariants on Bulkhead: the CAS on applying elects one goroutine, which
// loops until desired stops changing. ChangeConfig may run grant callbacks
// on this goroutine; if one panics, applying is reset before the panic goes
// on, so later windows still apply their limits.
func (b *Bulkhead) apply() {
	for {
		if !b.applying.CompareAndSwap(false, true) {
			return // the goroutine applying will see our value
		}
		want := int(b.desired.Load())
		b.changeLimit(want)
		if int(b.desired.Load()) == want {
			return
		}
	}
}

// changeLimit sets MaxConcurrentCalls to want and clears applying, also
// when a callback panics.
func (b *Bulkhead) changeLimit(want int) {
	defer b.applying.Store(false)
	if cfg := b.sem.Config(); cfg.MaxConcurrentCalls != want {
		cfg.MaxConcurrentCalls = want
		// Cannot fail: want >= 1 and the other fields come from a config
		// the semaphore accepted.
		_ = b.sem.ChangeConfig(cfg)
	}
}

// Compile-time check: an adaptive Bulkhead is a bulkhead.Bulkhead.
var _ bulkhead.Bulkhead = (*Bulkhead)(nil)
