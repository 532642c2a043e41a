package bulkhead_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// The OnDone callbacks of TestStressSemaphore. Each one runs on whichever
// goroutine decides its outcome (a worker that releases, cancels or changes
// the config, a callback doing so, the clock's goroutine on expiry, or a
// fresh goroutine past the delivery bounds) and, when granted, does one of:
//
//   - give the permit back at once;
//   - block on virtual time (a few clock steps) while holding it;
//   - block in AcquirePermission of the same bulkhead for a second permit;
//   - cancel a pending callback acquisition of any worker;
//   - ChangeConfig (when no other ChangeConfig is in progress);
//   - panic (when granted, or evicted by a worker's AcquirePermissionAsync,
//     whose newcomer is then withdrawn), in a first callback, with a second
//     callback of the same Acquisition giving the permit back (it must still
//     run exactly once).
//
// A worker recovers the panics that reach its operations (errStressPanic);
// a callback panics only on a worker goroutine, since a panic anywhere else
// (the clock's goroutine, a fresh delivery goroutine) ends the program, as
// documented.

// Callback behaviours, chosen by the registering worker.
const (
	cbRelease = iota
	cbBlockOnTime
	cbAcquireInside
	cbCancelOther
	cbChangeConfig
	cbPanic
	cbBehaviours
)

var (
	errStressPanic        = errors.New("stress: callback panics on purpose")
	errStressEvictedPanic = errors.New("stress: callback of an evicted waiter panics on purpose")
)

// goroutineID parses the running goroutine's number from its stack header
// (test-only: it costs a microsecond or two).
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

// callbackState is the part of stressRun the callbacks share.
type callbackState struct {
	workerGoroutines sync.Map     // goroutine ID -> true, for the workers
	open             sync.Map     // *bulkhead.Acquisition -> true: pending callback acquisitions
	liveN            atomic.Int64 // callbacks registered and not finished
	live             sync.WaitGroup
	panics           atomic.Int64 // panics recovered by workers
	// abandoned counts the panics of evicted waiters' callbacks raised
	// inside a worker's AcquirePermissionAsync, which withdraws its newcomer: each
	// publishes one event no worker accounts for (CallCancelled, or
	// CallPermitted if a grant won, or CallRejected if an expiry or an
	// eviction did).
	abandoned       atomic.Int64
	blockedOnTime   atomic.Int64
	acquiredInside  atomic.Int64
	cancelledInside atomic.Int64
	changedInside   atomic.Int64
	panicsSkipped   atomic.Int64 // cbPanic callbacks that ran off a worker goroutine
}

// recoverStressPanic is deferred by the workers around their operations.
func (r *stressRun) recoverStressPanic() {
	if p := recover(); p != nil {
		switch p {
		case errStressPanic:
		case errStressEvictedPanic:
		default:
			panic(p)
		}
		r.cb.panics.Add(1)
	}
}

// quiesceCallbacks waits, with every worker parked, until the only
// callbacks not finished are those of acquisitions still pending: a
// decided one's callbacks may still be about to start on a fresh goroutine
// (past a panic, a batch, the nesting bound) or be blocked on virtual time,
// which still runs.
func (r *stressRun) quiesceCallbacks() {
	for {
		pending := int64(0)
		for _, w := range r.workers {
			for _, a := range w.callbacks {
				if a.Err() == bulkhead.ErrPending {
					pending += int64(w.registeredOn[a])
				}
			}
		}
		if r.cb.liveN.Load() == pending {
			return
		}
		runtime.Gosched()
	}
}

func (w *stressWorker) callbackAcquire() {
	r := w.r
	kept := w.callbacks[:0]
	for _, a := range w.callbacks {
		if a.Err() == bulkhead.ErrPending {
			kept = append(kept, a)
		} else {
			delete(w.registeredOn, a)
			delete(w.weights, a)
		}
	}
	clear(w.callbacks[len(kept):])
	w.callbacks = kept
	if len(w.callbacks) >= stressMaxPending {
		a := w.callbacks[w.rng.IntN(len(w.callbacks))]
		if a.Cancel() {
			r.cancels.Add(1)
		}
		return
	}
	behaviour := w.rng.IntN(cbBehaviours)
	finished := w.rng.IntN(2) == 0
	cfg := randomConfig(w.rng)
	steps := 1 + w.rng.IntN(5)
	k := w.weight()
	inside := w.weight() // of the AcquirePermission of cbAcquireInside
	a := r.acquireAsync(k)
	if a.Err() == bulkhead.ErrPending {
		w.setWeight(a, k) // (not a shared Acquisition: the stable point reads the weight of pending ones)
	}
	w.callbacks = append(w.callbacks, a)
	if a.Err() == bulkhead.ErrPending {
		r.cb.open.Store(a, true)
	}
	var runs atomic.Int32
	var registered atomic.Bool // both callbacks are registered
	me := goroutineID()
	if w.registeredOn == nil {
		w.registeredOn = map[*bulkhead.Acquisition]int{}
	}
	register := func(f func(err error)) {
		r.callbacksRegistered.Add(1)
		r.cb.live.Add(1)
		r.cb.liveN.Add(1)
		w.registeredOn[a]++
		a.OnDone(func(err error) {
			defer r.cb.live.Done()
			defer r.cb.liveN.Add(-1)
			r.callbacksRun.Add(1)
			f(err)
		})
	}
	if behaviour == cbPanic {
		register(func(err error) {
			r.cb.open.Delete(a)
			var fe *bulkhead.FullError
			evicted := errors.As(err, &fe) && fe.Reason == bulkhead.Evicted
			if err != nil && !evicted {
				return // grants and evictions panic: they come from operations that give a permit back or acquire
			}
			g := goroutineID()
			if _, onWorker := r.cb.workerGoroutines.Load(g); !onWorker || (g == me && !registered.Load()) {
				// Off a worker, or at once inside OnDone before the
				// callback that gives the permit back was registered.
				r.cb.panicsSkipped.Add(1)
				return
			}
			if evicted {
				// Out of the AcquirePermissionAsync that evicted a: its
				// newcomer is never returned, and must be withdrawn.
				// Counted here, not where a worker recovers it: the
				// withdrawal may hand the newcomer's grant on to a
				// waiter whose callback panics in turn, and that panic
				// replaces this one.
				r.cb.abandoned.Add(1)
				panic(errStressEvictedPanic)
			}
			panic(errStressPanic)
		})
	}
	// Runs once: the permit, if granted, comes back here.
	register(func(err error) {
		r.cb.open.Delete(a)
		if runs.Add(1) != 1 {
			r.violate("OnDone callback ran twice")
		}
		switch {
		case err == nil:
			r.grants.Add(1)
			if n := r.held.Add(int64(k)); n > stressMaxLimit {
				r.violate("workers hold %d permits, more than the largest limit %d", n, stressMaxLimit)
			}
			// Deferred: a callback that whileHolding's re-entry runs on
			// this goroutine may panic through this one.
			defer func() {
				r.held.Add(-int64(k))
				if finished {
					r.onCompletes.Add(1)
					r.finish(k)
				} else {
					r.releases.Add(1)
					r.release(k)
				}
			}()
			r.whileHolding(behaviour, cfg, steps, inside)
		case err == bulkhead.ErrCancelled:
		default:
			w.rejected(err)
			if behaviour == cbCancelOther {
				// Re-enter from a rejection: an expiry sweep's runner (the
				// clock's goroutine or a fresh one carrying on) or an
				// evicting call cancels another waiter mid-delivery.
				r.cb.open.Range(func(k, _ any) bool {
					if k.(*bulkhead.Acquisition).Cancel() {
						r.cancels.Add(1)
						r.cb.cancelledInside.Add(1)
					}
					return false
				})
			}
		}
	})
	registered.Store(true)
}

// whileHolding is what a granted callback does before it gives its permit
// back.
func (r *stressRun) whileHolding(behaviour int, cfg bulkhead.Config, steps, k int) {
	if (behaviour == cbBlockOnTime || behaviour == cbAcquireInside) && r.weighted && goroutineID() == r.clockG.Load() {
		// Without weights, never on the clock's goroutine: only grants get
		// here, and the clock only expires waits. With weights, an expiry
		// may grant the waiters a heavy one held back, on the clock's
		// goroutine, where waiting for time (or for a wait to expire)
		// would wait for ever.
		return
	}
	switch behaviour {
	case cbBlockOnTime:
		r.cb.blockedOnTime.Add(1)
		ch := make(chan struct{})
		r.clock.AfterFunc(time.Duration(steps)*stressClockStep, func() { close(ch) })
		<-ch
	case cbAcquireInside:
		r.cb.acquiredInside.Add(1)
		r.blocking.Add(1)
		switch err := r.acquire(context.Background(), k); {
		case err == nil:
			r.grants.Add(1)
			if n := r.held.Add(int64(k)); n > stressMaxLimit {
				r.violate("workers hold %d permits, more than the largest limit %d", n, stressMaxLimit)
			}
			r.held.Add(-int64(k))
			r.onCompletes.Add(1)
			r.finish(k) // may run (and panic in) a callback of the grant it makes
		case errors.Is(err, bulkhead.ErrBulkheadFull), errors.Is(err, bulkhead.ErrTooHeavy):
			r.rejectedErr(err)
		default:
			r.violate("AcquirePermission inside a callback returned %v", err)
		}
	case cbCancelOther:
		r.cb.open.Range(func(k, _ any) bool {
			if k.(*bulkhead.Acquisition).Cancel() {
				r.cancels.Add(1)
				r.cb.cancelledInside.Add(1)
			}
			return false // one at most
		})
	case cbChangeConfig:
		if r.cfgMu.TryLock() { // not while another ChangeConfig runs (it may be this goroutine's)
			defer r.cfgMu.Unlock()
			r.cb.changedInside.Add(1)
			r.changes.Add(1)
			r.changeConfigLocked(cfg)
		}
	}
}
