package bulkhead_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// stressDuration sets how long TestStressSemaphore runs (real time). The
// default keeps `make test` fast; `make stress` passes minutes, e.g.
// go test -run TestStressSemaphore -stress.duration=2m . The environment
// variable STRESS_DURATION (a time.ParseDuration string) works too.
var stressDuration = flag.Duration("stress.duration", 0, "how long TestStressSemaphore runs (default 1.5s, or $STRESS_DURATION)")

const stressDefaultDuration = 1500 * time.Millisecond

func stressRunTime(t *testing.T) time.Duration {
	if *stressDuration > 0 {
		return *stressDuration
	}
	if s := os.Getenv("STRESS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("STRESS_DURATION=%q: want a positive duration such as 2m", s)
		}
		return d
	}
	return stressDefaultDuration
}

// Sizes of the stress run.
const (
	stressWorkers    = 8
	stressMaxLimit   = 4    // MaxConcurrentCalls is always in 1..stressMaxLimit
	stressMaxPending = 2    // async acquisitions a worker keeps open at once
	stressMaxWait    = 400  // MaxWaitDuration is 0..stressMaxWait µs of virtual time
	stressMaxQueue   = 10   // MaxQueuedCalls is 0..stressMaxQueue (0 with a wait: Unbounded)
	stressCheckEvery = 4096 // operations between two stable-point checks
	stressClockStep  = 20 * time.Microsecond
	// Every waiter a worker can have: its pending async acquisitions, its
	// pending callback acquisitions and one blocking AcquirePermission.
	stressMaxWaiters = stressWorkers * (2*stressMaxPending + 1)
)

// TestStressSemaphore runs stressWorkers goroutines, each doing a random mix
// of every operation of a Semaphore (TryAcquirePermission,
// AcquirePermissionAsync kept open across operations, AcquirePermission
// with a context that other workers cancel, Cancel, waits that expire,
// ReleasePermission, FinishCall, releases from inside OnDone callbacks,
// ChangeConfig with valid and invalid configs, Metrics), for
// -stress.duration of real time. Unlike TestHammer, which runs in a
// synctest bubble where a timer fires only when every goroutine is
// blocked, expiry here really races grants and cancels: time is a
// testkit.VirtualClock that a dedicated goroutine advances without pause,
// so waits expire on that goroutine while workers release and cancel on
// theirs (no real timer, no sleep).
//
// Invariants, checked continuously by every worker (op "check"):
//   - 0 <= AvailableConcurrentCalls <= MaxAllowedConcurrentCalls, and the
//     metrics show the config in force;
//   - 0 <= InFlightCalls <= stressMaxLimit, and the permits the workers
//     hold never exceed stressMaxLimit;
//   - QueuedCalls <= the queue bound in force, or, just after the bound
//     was lowered, <= the queue then (a lower bound rejects nobody already
//     queued, and the queue never grows while above the bound);
//   - every outcome is one of the documented ones.
//
// At stable points (every stressCheckEvery operations, all workers and the
// clock parked), exactly:
//   - InFlightCalls = permits held by workers + granted acquisitions not yet
//     collected; AvailableConcurrentCalls = max(0, limit - InFlightCalls);
//   - QueuedCalls = acquisitions still pending; if one is pending, no
//     permit is free (queued calls are never passed over).
//
// At the end: every permit back, no waiter, no timer armed, every OnDone
// callback run exactly once, and the events agree with the outcomes
// (CallRejected = rejections seen, CallFinished = FinishCall calls, and
// CallPermitted/CallCancelled = grants/cancellations seen plus the
// AcquirePermission calls that returned ctx.Err()).
//
// Each queue order runs twice: with the counting listener registered all
// along (so every call takes its slow path, which publishes), and quiet,
// where the fast paths inlined at the call site run (permits.go,
// takeQuiet and giveQuiet) while a goroutine registers and removes a
// listener that counts nothing, without pause, so that the permit word's
// listenerBit flips under the workers; the quiet run checks everything but
// the events.
func TestStressSemaphore(t *testing.T) { stressSemaphore(t, false) }

// TestStressWeightedSemaphore is TestStressSemaphore with weighted calls
// (SemaphoreCall): every operation takes and gives a random weight of 1 to
// stressMaxWeight permits (some above the limit in force: ErrTooHeavy), so
// waiters of different weights pass each other (bounded bypass), heavy
// ones are rejected by ChangeConfig, and the callbacks re-enter with
// weights of their own. The counts are of permits: InFlightCalls must be
// the permits held plus the weights granted and not collected, and the
// independent counter of permits the workers hold never exceeds the
// largest limit. At stable points a call may wait while permits are free
// only behind one that needs more than are free (no stall).
func TestStressWeightedSemaphore(t *testing.T) { stressSemaphore(t, true) }

// stressMaxWeight is the heaviest call of TestStressWeightedSemaphore.
const stressMaxWeight = 3

func stressSemaphore(t *testing.T, weighted bool) {
	d := stressRunTime(t)
	for _, order := range []bulkhead.QueueOrder{bulkhead.FIFO, bulkhead.LIFO} {
		for _, quiet := range []bool{false, true} {
			name := order.String()
			if quiet {
				name += "/quiet"
			}
			t.Run(name, func(t *testing.T) {
				r := newStressRun(t, order, quiet)
				r.weighted = weighted
				r.run(d / 4)
				t.Logf("%s: %d operations in %v (%d stable-point checks, %d continuous checks), %d violations; outcomes: %s",
					name, r.ops.Load(), d/4, r.stablePoints, r.checks.Load(), r.violations.Load(), r.stats())
				if n := r.violations.Load(); n > 0 {
					t.Errorf("%d invariant violations; first ones:\n%s", n, r.firstViolations())
				}
			})
		}
	}
}

// stressRun is one stress run over one Semaphore.
type stressRun struct {
	t     *testing.T
	sem   *bulkhead.Semaphore
	clock *testkit.VirtualClock
	// weighted: calls take 1..stressMaxWeight permits (SemaphoreCall);
	// else every call is the Semaphore's own, of one permit.
	weighted bool
	// quiet: no listener counts the events (they are not checked); one
	// that counts nothing is registered and removed without pause.
	quiet bool
	// clockG is the clock goroutine's ID: a callback it runs (a grant that
	// an expiry made possible, weighted runs only) must not block on time.
	clockG atomic.Uint64

	// cfgMu serialises ChangeConfig with the continuous checks, which read
	// the config in force and the queue ceiling under it.
	cfgMu       sync.Mutex
	cfg         bulkhead.Config
	queueCeil   int // -1: unbounded queue
	workers     []*stressWorker
	blockCancel [stressWorkers]atomic.Pointer[context.CancelFunc]

	// Stable points. The coordinator writes resume before pause.Store(true)
	// (workers) and pauseClock.Store(true) (the clock goroutine, parked
	// last, so that the waits of workers on their way to park can expire);
	// they read it after the Load returns true.
	pause        atomic.Bool
	pauseClock   atomic.Bool
	stop         atomic.Bool
	resume       chan struct{}
	parked       chan struct{}
	due          chan struct{}
	stablePoints int

	// Counters of what the workers saw.
	ops, checks                          atomic.Int64
	held                                 atomic.Int64 // permits held by workers right now
	tooHeavy                             atomic.Int64 // *TooHeavyError rejections
	grants, onCompletes, releases        atomic.Int64
	rejections, cancels, ctxErrs         atomic.Int64
	preCancelled                         atomic.Int64
	callbacksRegistered, callbacksRun    atomic.Int64
	tryOK, tryNo, blocking, changes, bad atomic.Int64
	reasons                              [8]atomic.Int64

	// Events published by the Semaphore.
	evPermitted, evRejected, evFinished, evCancelled atomic.Int64

	cb callbackState // shared by the OnDone callbacks (stress_callbacks_test.go)

	violations atomic.Int64
	vmu        sync.Mutex
	vfirst     []string
}

func newStressRun(t *testing.T, order bulkhead.QueueOrder, quiet bool) *stressRun {
	clock := testkit.NewVirtualClock(time.Unix(1_700_000_000, 0))
	cfg := bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: 100 * time.Microsecond, MaxQueuedCalls: 4, QueueOrder: order}
	sem, err := bulkhead.New("stress", cfg, bulkhead.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, sem)
	r := &stressRun{t: t, sem: sem, clock: clock, cfg: cfg, queueCeil: cfg.MaxQueuedCalls, quiet: quiet,
		parked: make(chan struct{}, stressWorkers+1), due: make(chan struct{}, 1)}
	if quiet {
		return r
	}
	remove := sem.OnEvent(func(e bulkhead.Event) {
		switch e.Type {
		case bulkhead.CallPermitted:
			r.evPermitted.Add(1)
		case bulkhead.CallRejected:
			r.evRejected.Add(1)
		case bulkhead.CallFinished:
			r.evFinished.Add(1)
		case bulkhead.CallCancelled:
			r.evCancelled.Add(1)
		}
	})
	t.Cleanup(remove)
	return r
}

func (r *stressRun) violate(format string, args ...any) {
	r.violations.Add(1)
	r.vmu.Lock()
	defer r.vmu.Unlock()
	if len(r.vfirst) < 10 {
		r.vfirst = append(r.vfirst, fmt.Sprintf(format, args...))
	}
}

func (r *stressRun) firstViolations() string {
	r.vmu.Lock()
	defer r.vmu.Unlock()
	return fmt.Sprint(r.vfirst)
}

func (r *stressRun) stats() string {
	return fmt.Sprintf("grants=%d onComplete=%d release=%d rejections=%d (no wait %d, queue full %d, wait timeout %d, evicted %d, too heavy %d) cancels=%d ctxErr=%d try=%d/%d blocking=%d changeConfig=%d invalidConfig=%d callbacks=%d",
		r.grants.Load(), r.onCompletes.Load(), r.releases.Load(), r.rejections.Load(),
		r.reasons[bulkhead.NoWait].Load(), r.reasons[bulkhead.QueueFull].Load(), r.reasons[bulkhead.WaitTimeout].Load(), r.reasons[bulkhead.Evicted].Load(), r.tooHeavy.Load(),
		r.cancels.Load(), r.ctxErrs.Load(), r.tryOK.Load(), r.tryOK.Load()+r.tryNo.Load(), r.blocking.Load(), r.changes.Load(), r.bad.Load(), r.callbacksRun.Load()) +
		fmt.Sprintf("; in callbacks: blocked on time=%d AcquirePermission=%d cancels=%d changeConfig=%d panics=%d (recovered by workers, %d of them evicted waiters' that withdrew the newcomer; %d skipped off a worker)",
			r.cb.blockedOnTime.Load(), r.cb.acquiredInside.Load(), r.cb.cancelledInside.Load(), r.cb.changedInside.Load(), r.cb.panics.Load(), r.cb.abandoned.Load(), r.cb.panicsSkipped.Load())
}

// run drives the workers and the clock for d, with stable-point checks
// along the way, then winds everything down and checks the end state.
func (r *stressRun) run(d time.Duration) {
	var workers, clock, toggler sync.WaitGroup
	clockStop, togglerStop := make(chan struct{}), make(chan struct{})
	clock.Go(func() { r.advanceClock(clockStop) })
	if r.quiet {
		toggler.Go(func() { r.toggleListener(togglerStop) })
	}
	for i := range stressWorkers {
		w := &stressWorker{r: r, id: i, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))}
		r.workers = append(r.workers, w)
		workers.Go(w.loop)
	}
	start := time.Now()
	for time.Since(start) < d {
		<-r.due
		r.stablePoint()
	}
	r.stop.Store(true)
	close(togglerStop)
	toggler.Wait()
	workers.Wait() // the clock still runs: blocked waits end
	r.cb.live.Wait()
	close(clockStop)
	clock.Wait()
	r.checkEnd()
}

// advanceClock moves virtual time forward without pause, firing expiry
// timers on this goroutine, until stop is closed.
func (r *stressRun) advanceClock(stop <-chan struct{}) {
	r.clockG.Store(goroutineID())
	for {
		select {
		case <-stop:
			return
		default:
		}
		if r.pauseClock.Load() {
			resume := r.resume
			r.parked <- struct{}{}
			<-resume
		}
		r.clock.Advance(stressClockStep)
		runtime.Gosched()
	}
}

// toggleListener registers and removes a listener that counts nothing,
// without pause, until stop is closed: listenerBit flips under the
// workers' fast paths (a quiet run).
func (r *stressRun) toggleListener(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		remove := r.sem.OnEvent(func(bulkhead.Event) {})
		runtime.Gosched()
		remove()
		runtime.Gosched()
	}
}

// stablePoint parks every worker and the clock between two operations,
// checks the exact invariants, and lets them go on.
func (r *stressRun) stablePoint() {
	r.resume = make(chan struct{})
	r.pause.Store(true)
	for range stressWorkers {
		<-r.parked
	}
	r.quiesceCallbacks() // the clock still runs: callbacks blocked on it finish
	r.pauseClock.Store(true)
	<-r.parked
	r.stablePoints++
	m := r.sem.Metrics()
	var held, granted, pending, heaviest int
	for _, w := range r.workers {
		held += w.held
		for _, a := range w.pending {
			switch a.Err() {
			case nil:
				granted += w.weightOf(a)
			case bulkhead.ErrPending:
				pending++
				heaviest = max(heaviest, w.weightOf(a))
			}
		}
		for _, a := range w.callbacks {
			if a.Err() == bulkhead.ErrPending {
				pending++
				heaviest = max(heaviest, w.weightOf(a))
			}
		}
	}
	if m.InFlightCalls != held+granted {
		r.violate("stable point: InFlightCalls %d, want %d held + %d granted not yet collected; %+v", m.InFlightCalls, held, granted, m)
	}
	if want := max(0, m.MaxAllowedConcurrentCalls-m.InFlightCalls); m.AvailableConcurrentCalls != want {
		r.violate("stable point: AvailableConcurrentCalls %d, want %d; %+v", m.AvailableConcurrentCalls, want, m)
	}
	if m.QueuedCalls != pending {
		r.violate("stable point: QueuedCalls %d, want %d pending acquisitions; %+v", m.QueuedCalls, pending, m)
	}
	if m.QueuedCalls > 0 && m.AvailableConcurrentCalls >= heaviest {
		// A call waits while permits are free only behind one that needs
		// more than are free (weights; without them, none is free).
		r.violate("stable point: %d calls wait while %d permits are free, and the heaviest waiter needs %d; %+v", m.QueuedCalls, m.AvailableConcurrentCalls, heaviest, m)
	}
	if int64(held) != r.held.Load() {
		r.violate("stable point: workers hold %d permits, counter says %d", held, r.held.Load())
	}
	r.pause.Store(false)
	r.pauseClock.Store(false)
	close(r.resume)
}

// checkEnd checks that everything came back and that the events agree with
// what the workers saw.
func (r *stressRun) checkEnd() {
	m := r.sem.Metrics()
	if m.InFlightCalls != 0 || m.QueuedCalls != 0 || m.AvailableConcurrentCalls != m.MaxAllowedConcurrentCalls {
		r.violate("end: permits or waiters left: %+v", m)
	}
	if n := r.clock.PendingTimers(); n != 0 {
		r.violate("end: %d timer(s) still armed with no waiter", n)
	}
	if g, back := r.grants.Load(), r.onCompletes.Load()+r.releases.Load(); g != back {
		r.violate("end: %d permits granted to workers, %d given back", g, back)
	}
	if reg, ran := r.callbacksRegistered.Load(), r.callbacksRun.Load(); reg != ran {
		r.violate("end: %d OnDone callbacks registered, %d ran", reg, ran)
	}
	if r.quiet {
		return // no listener counted the events
	}
	abandoned := r.cb.abandoned.Load()
	extraRejected := r.evRejected.Load() - r.rejections.Load()
	if extraRejected < 0 || extraRejected > abandoned {
		r.violate("end: %d CallRejected events, %d rejections seen, %d newcomers abandoned", r.evRejected.Load(), r.rejections.Load(), abandoned)
	}
	if ev, seen := r.evFinished.Load(), r.onCompletes.Load(); ev != seen {
		r.violate("end: %d CallFinished events, %d FinishCall calls", ev, seen)
	}
	// AcquirePermission returns ctx.Err() after withdrawing (CallCancelled),
	// after giving back a grant that raced the context (CallPermitted, then
	// an internal ReleasePermission), or at once, with no event, when ctx
	// was done before the call (always when this worker cancelled it first;
	// sometimes when another worker did).
	extraPermitted := r.evPermitted.Load() - r.grants.Load()
	extraCancelled := r.evCancelled.Load() - r.cancels.Load()
	// Each abandoned newcomer adds exactly one event to those three.
	if extraPermitted < 0 || extraCancelled < 0 || extraPermitted+extraCancelled+extraRejected < abandoned ||
		extraPermitted+extraCancelled > r.ctxErrs.Load()-r.preCancelled.Load()+abandoned-extraRejected {
		r.violate("end: events permitted=%d cancelled=%d do not match grants=%d cancels=%d ctxErr=%d (of which %d with ctx done before the call), abandoned=%d (%d rejected)",
			r.evPermitted.Load(), r.evCancelled.Load(), r.grants.Load(), r.cancels.Load(), r.ctxErrs.Load(), r.preCancelled.Load(), abandoned, extraRejected)
	}
}

// stressWorker is one goroutine of the run. Its fields are owned by its
// goroutine, and read by the coordinator only while it is parked.
type stressWorker struct {
	r         *stressRun
	id        int
	rng       *rand.Rand
	held      int                     // permits this worker holds
	heldCalls []int                   // the weights of the calls holding them
	pending   []*bulkhead.Acquisition // async acquisitions not collected yet
	// weights holds the weight of every acquisition of pending and
	// callbacks heavier than 1.
	weights   map[*bulkhead.Acquisition]int
	callbacks []*bulkhead.Acquisition // acquisitions whose OnDone releases
	// registeredOn counts the callbacks registered on each of callbacks.
	registeredOn map[*bulkhead.Acquisition]int
}

func (w *stressWorker) loop() {
	r := w.r
	r.cb.workerGoroutines.Store(goroutineID(), true)
	for !r.stop.Load() {
		if r.pause.Load() {
			resume := r.resume
			r.parked <- struct{}{}
			<-resume
			continue
		}
		func() {
			defer r.recoverStressPanic() // a callback this step ran panicked
			w.step()
		}()
		if n := r.ops.Add(1); n%stressCheckEvery == 0 {
			select {
			case r.due <- struct{}{}:
			default:
			}
		}
	}
	w.windDown()
}

func (w *stressWorker) step() {
	r := w.r
	k := w.weight()
	if w.held > 0 && w.rng.IntN(3) == 0 {
		// Calls are short: permits keep coming back, so that waiters get
		// granted as often as they expire.
		w.giveBack()
		return
	}
	switch op := w.rng.IntN(100); {
	case op < 12: // TryAcquirePermission
		if r.try(k) {
			r.tryOK.Add(1)
			w.take(k)
		} else {
			r.tryNo.Add(1)
			// (Too heavy or not, a failed TryAcquirePermission publishes
			// one CallRejected.)
			w.rejected(&bulkhead.FullError{Name: "stress", Reason: bulkhead.NoWait})
		}
	case op < 30: // AcquirePermissionAsync, kept open
		if len(w.pending) >= stressMaxPending {
			w.collect(true)
			return
		}
		a := r.acquireAsync(k)
		if r.weighted && a.Err() != bulkhead.ErrPending {
			// Decided at once: maybe a shared Acquisition (granted, or a
			// prebuilt rejection), whose weight the worker could not tell
			// from another's; it is settled now.
			w.settleK(a, k)
			return
		}
		w.setWeight(a, k)
		w.pending = append(w.pending, a)
	case op < 40: // Cancel an open acquisition
		if len(w.pending) == 0 {
			return
		}
		i := w.rng.IntN(len(w.pending))
		a := w.pending[i]
		if a.Cancel() {
			r.cancels.Add(1)
			if a.Err() != bulkhead.ErrCancelled {
				r.violate("Cancel returned true but Err() = %v", a.Err())
			}
			w.pending = append(w.pending[:i], w.pending[i+1:]...)
			delete(w.weights, a)
			return
		}
		w.collect(false)
	case op < 48: // collect what was decided
		w.collect(false)
	case op < 56: // blocking AcquirePermission with a context others cancel
		w.blockingAcquire(k)
	case op < 60: // cancel another worker's blocking context
		if c := r.blockCancel[w.rng.IntN(stressWorkers)].Load(); c != nil {
			(*c)()
		}
	case op < 78: // give a permit back
		w.giveBack()
	case op < 86: // acquisition whose OnDone callback releases at once
		w.callbackAcquire()
	case op < 90: // ChangeConfig (valid, now and then invalid)
		w.changeConfig()
	default: // continuous invariants
		w.check()
	}
}

// giveBack returns one permit this worker holds, with FinishCall or
// ReleasePermission.
func (w *stressWorker) giveBack() {
	r := w.r
	if w.held == 0 {
		return
	}
	k := w.heldCalls[len(w.heldCalls)-1]
	w.heldCalls = w.heldCalls[:len(w.heldCalls)-1]
	w.held -= k
	r.held.Add(-int64(k))
	if w.rng.IntN(2) == 0 {
		r.onCompletes.Add(1)
		r.finish(k)
	} else {
		r.releases.Add(1)
		r.release(k)
	}
}

// take accounts for a call of weight k this worker now holds.
func (w *stressWorker) take(k int) {
	r := w.r
	w.held += k
	w.heldCalls = append(w.heldCalls, k)
	r.grants.Add(1)
	if n := r.held.Add(int64(k)); n > stressMaxLimit {
		r.violate("workers hold %d permits, more than the largest limit %d", n, stressMaxLimit)
	}
}

// rejected checks and counts a rejection.
func (w *stressWorker) rejected(err error) { w.r.rejectedErr(err) }

// rejectedErr checks and counts a rejection (safe on any goroutine).
func (r *stressRun) rejectedErr(err error) {
	var te *bulkhead.TooHeavyError
	if errors.As(err, &te) {
		if !r.weighted || te.Name != "stress" || te.Weight <= te.Limit || errors.Is(err, bulkhead.ErrBulkheadFull) || !errors.Is(err, bulkhead.ErrTooHeavy) {
			r.violate("unexpected rejection %#v", err)
			return
		}
		r.tooHeavy.Add(1)
		r.rejections.Add(1)
		return
	}
	var fe *bulkhead.FullError
	if !errors.As(err, &fe) || !errors.Is(err, bulkhead.ErrBulkheadFull) || fe.Name != "stress" || fe.Reason < bulkhead.NoWait || fe.Reason > bulkhead.Evicted {
		r.violate("unexpected rejection %#v", err)
		return
	}
	r.reasons[fe.Reason].Add(1)
	r.rejections.Add(1)
}

// settle accounts for the outcome of a decided acquisition.
func (w *stressWorker) settle(a *bulkhead.Acquisition) {
	k := w.weightOf(a)
	delete(w.weights, a)
	w.settleK(a, k)
}

// settleK is settle for an acquisition of weight k.
func (w *stressWorker) settleK(a *bulkhead.Acquisition, k int) {
	switch err := a.Err(); {
	case err == nil:
		w.take(k)
	case errors.Is(err, bulkhead.ErrBulkheadFull), errors.Is(err, bulkhead.ErrTooHeavy):
		w.rejected(err)
	default:
		w.r.violate("acquisition nobody cancelled ended with %v", err)
	}
}

// collect accounts for the decided open acquisitions; with wait, it waits
// for the oldest one first.
func (w *stressWorker) collect(wait bool) {
	if wait && len(w.pending) > 0 {
		<-w.pending[0].Done()
	}
	kept := w.pending[:0]
	for _, a := range w.pending {
		select {
		case <-a.Done():
			w.settle(a)
		default:
			kept = append(kept, a)
		}
	}
	clear(w.pending[len(kept):])
	w.pending = kept
}

func (w *stressWorker) blockingAcquire(k int) {
	r := w.r
	r.blocking.Add(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if w.rng.IntN(8) == 0 {
		cancel() // already done: must fail without taking a permit
		r.preCancelled.Add(1)
	}
	r.blockCancel[w.id].Store(&cancel)
	defer func() {
		if p := recover(); p != nil {
			// A callback panicked inside the permit AcquirePermission gave
			// back after losing to ctx: it was returning ctx.Err().
			r.blockCancel[w.id].Store(nil)
			r.ctxErrs.Add(1)
			panic(p)
		}
	}()
	err := r.acquire(ctx, k)
	r.blockCancel[w.id].Store(nil)
	switch {
	case err == nil:
		w.take(k)
	case errors.Is(err, context.Canceled):
		r.ctxErrs.Add(1)
	case errors.Is(err, bulkhead.ErrBulkheadFull), errors.Is(err, bulkhead.ErrTooHeavy):
		w.rejected(err)
	default:
		r.violate("AcquirePermission returned %v", err)
	}
}

func (w *stressWorker) changeConfig() {
	r := w.r
	r.cfgMu.Lock()
	defer r.cfgMu.Unlock()
	r.changes.Add(1)
	if w.rng.IntN(10) == 0 {
		bad := r.cfg
		switch w.rng.IntN(3) {
		case 0:
			bad.MaxConcurrentCalls = -w.rng.IntN(3)
		case 1:
			bad.MaxWaitDuration = -time.Duration(1 + w.rng.IntN(1000))
		default:
			bad.MaxQueuedCalls = -1 - w.rng.IntN(3)
		}
		r.bad.Add(1)
		if err := r.sem.ChangeConfig(bad); !errors.Is(err, bulkhead.ErrInvalidConfig) {
			r.violate("ChangeConfig(%+v) = %v, want a *ConfigError", bad, err)
		}
		if got := r.sem.Config(); got != r.cfg {
			r.violate("an invalid ChangeConfig changed the config to %+v", got)
		}
		return
	}
	r.changeConfigLocked(randomConfig(w.rng))
}

// randomConfig returns a valid config within the stress run's sizes.
func randomConfig(rng *rand.Rand) bulkhead.Config {
	cfg := bulkhead.Config{
		MaxConcurrentCalls: 1 + rng.IntN(stressMaxLimit),
		MaxWaitDuration:    time.Duration(rng.IntN(stressMaxWait+1)) * time.Microsecond,
		MaxQueuedCalls:     rng.IntN(stressMaxQueue + 1),
		QueueOrder:         bulkhead.QueueOrder(rng.IntN(2)),
	}
	if cfg.MaxQueuedCalls == 0 && cfg.MaxWaitDuration > 0 {
		cfg.MaxQueuedCalls = bulkhead.Unbounded // a wait needs a queue
	}
	return cfg
}

// changeConfigLocked applies cfg and records it as the config in force;
// r.cfgMu is held. A callback of a grant that ChangeConfig makes may panic
// after the config was applied: the config is recorded either way.
func (r *stressRun) changeConfigLocked(cfg bulkhead.Config) {
	applied := false
	defer func() {
		p := recover() // a callback's panic: the config was applied
		if applied || p != nil {
			r.cfg = cfg
			r.queueCeil = -1
			if cfg.MaxQueuedCalls != bulkhead.Unbounded {
				r.queueCeil = max(cfg.MaxQueuedCalls, r.sem.Metrics().QueuedCalls)
			}
		}
		if p != nil {
			panic(p)
		}
	}()
	if err := r.sem.ChangeConfig(cfg); err != nil {
		r.violate("ChangeConfig(%+v): %v", cfg, err)
		return
	}
	applied = true
}

// check verifies the invariants that hold at every instant.
func (w *stressWorker) check() {
	r := w.r
	r.checks.Add(1)
	r.cfgMu.Lock()
	m := r.sem.Metrics()
	cfg, ceil := r.cfg, r.queueCeil
	r.cfgMu.Unlock()
	switch {
	case m.MaxAllowedConcurrentCalls != cfg.MaxConcurrentCalls || m.MaxQueuedCalls != cfg.MaxQueuedCalls:
		r.violate("metrics %+v do not show the config in force %+v", m, cfg)
	case m.AvailableConcurrentCalls < 0 || m.AvailableConcurrentCalls > m.MaxAllowedConcurrentCalls:
		r.violate("available out of range: %+v", m)
	case m.InFlightCalls < 0 || m.InFlightCalls > stressMaxLimit:
		r.violate("in flight out of range: %+v", m)
	case m.QueuedCalls < 0 || m.QueuedCalls > stressMaxWaiters:
		r.violate("queued out of range: %+v", m)
	case ceil >= 0 && m.QueuedCalls > ceil:
		r.violate("queued %d above the bound %d in force (%+v)", m.QueuedCalls, ceil, cfg)
	}
}

// windDown gives back everything this worker holds or waits for.
func (w *stressWorker) windDown() {
	r := w.r
	for _, a := range w.pending {
		if a.Cancel() {
			r.cancels.Add(1)
			delete(w.weights, a)
			continue
		}
		<-a.Done()
		w.settle(a)
	}
	w.pending = nil
	for _, a := range w.callbacks {
		if a.Cancel() {
			r.cancels.Add(1)
		}
		<-a.Done()
	}
	w.callbacks = nil
	for w.held > 0 {
		k := w.heldCalls[len(w.heldCalls)-1]
		w.heldCalls = w.heldCalls[:len(w.heldCalls)-1]
		w.held -= k
		r.held.Add(-int64(k))
		r.onCompletes.Add(1)
		func() {
			defer r.recoverStressPanic()
			r.finish(k)
		}()
	}
}

// weight draws the weight of the next call: 1 unless the run is weighted.
func (w *stressWorker) weight() int {
	if !w.r.weighted {
		return 1
	}
	return 1 + w.rng.IntN(stressMaxWeight)
}

func (w *stressWorker) setWeight(a *bulkhead.Acquisition, k int) {
	if k == 1 {
		return
	}
	if w.weights == nil {
		w.weights = map[*bulkhead.Acquisition]int{}
	}
	w.weights[a] = k
}

func (w *stressWorker) weightOf(a *bulkhead.Acquisition) int {
	if k, ok := w.weights[a]; ok {
		return k
	}
	return 1
}

// Config returns the config in force as the run recorded it.
func (r *stressRun) Config() bulkhead.Config {
	r.cfgMu.Lock()
	defer r.cfgMu.Unlock()
	return r.cfg
}

// The operations of a call of weight k: a SemaphoreCall's in a weighted
// run (k may be 1), the Semaphore's own otherwise.

func (r *stressRun) try(k int) bool {
	if r.weighted {
		return r.sem.Call(k).TryAcquirePermission()
	}
	return r.sem.TryAcquirePermission()
}

func (r *stressRun) acquireAsync(k int) *bulkhead.Acquisition {
	if r.weighted {
		return r.sem.Call(k).AcquirePermissionAsync()
	}
	return r.sem.AcquirePermissionAsync()
}

func (r *stressRun) acquire(ctx context.Context, k int) error {
	if r.weighted {
		return r.sem.Call(k).AcquirePermission(ctx)
	}
	return r.sem.AcquirePermission(ctx)
}

func (r *stressRun) finish(k int) {
	if r.weighted {
		r.sem.Call(k).FinishCall()
		return
	}
	r.sem.FinishCall()
}

func (r *stressRun) release(k int) {
	if r.weighted {
		r.sem.Call(k).ReleasePermission()
		return
	}
	r.sem.ReleasePermission()
}
