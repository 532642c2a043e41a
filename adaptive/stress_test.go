package adaptive_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/testkit"
)

const (
	stressWorkers  = 6
	stressMaxLimit = 6
	// A run lasts at least stressOps operations (over all workers) and
	// stressWindows windows, counted rather than timed so that a loaded
	// machine makes it slower, not shorter; it gives up, failing, at
	// stressMaxOps operations.
	stressOps     = 100_000
	stressWindows = 20
	stressMaxOps  = 50 * stressOps
)

// jumpy returns a pseudo-random limit in [1, stressMaxLimit] on every
// sample, so that the controller calls ChangeConfig as often as it can.
type jumpy struct{ rng *rand.Rand }

func (j *jumpy) Update(float64, adaptive.Sample) float64 {
	return float64(1 + j.rng.IntN(stressMaxLimit))
}

type errStressPanic struct{}

// TestStressChangeConfigWhileCallsQueueAndRun hammers an adaptive Bulkhead
// whose every finished call closes a window and changes the limit (so
// ChangeConfig runs concurrently with grants, expiries and cancels, and
// re-entrantly from grant callbacks), for stressOps operations and at least
// stressWindows windows.
// Workers mix typed calls (TryAcquire/Acquire + Finish or Release, some as
// overload), plain async acquisitions kept open and later finished (with
// FinishCall, or with StartCall and FinishCallStarted as the operators
// do), released or cancelled, blocking Acquire whose context another worker
// cancels, and OnDone callbacks that finish their call at once, spin
// (block) for a while, or panic after giving their permit back. A
// dedicated goroutine advances the virtual clock without pause, so waits
// expire concurrently.
//
// The run is a testing/synctest bubble only so that its end is a true
// quiescent point. Under the core's delivery contract (docs/design.md,
// "Delivery"), the callbacks of a call that decides several outcomes (a
// growing ChangeConfig, an expiry sweep), of a delivery past the nesting
// bound and those after a panicking callback run on fresh goroutines, and
// the deciding call returns once they have started, not finished: when the
// workers and the clock have stopped, a callback may still be about to run
// or to give its permit back, the proxy's grant callback may still be
// about to give back the permit of a proxy cancelled first, and a watching
// controller may still be about to hear a CallPermitted. synctest.Wait
// waits for all of them before anything is counted. The bubble's fake time
// is not used: the semaphore and the controller run on the virtual clock.
//
// Checked continuously: the limit stays in [1, stressMaxLimit], free
// permits in [0, limit], permits held never above stressMaxLimit, and the
// controller's in-flight count never negative nor above stressMaxLimit.
// At the end: no permit held or call queued (testkit.CheckPermits), the
// controller counts no call in flight, the limit in force is the one the
// controller applied last, and every OnDone callback ran exactly once.
func TestStressChangeConfigWhileCallsQueueAndRun(t *testing.T) {
	for _, watch := range []bool{false, true} {
		name := "New"
		if watch {
			name = "Watch"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { stressRun(t, watch) })
		})
	}
}

// stressRun is one run of the stress test, over a controller made by New
// or, if watch, by Watch (which counts from the semaphore's events).
func stressRun(t *testing.T, watch bool) {
	clock := testkit.NewVirtualClock(epoch)
	sem, err := bulkhead.New("stress", bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: 200 * time.Microsecond, MaxQueuedCalls: 8}, bulkhead.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	var seed atomic.Uint64
	wrap := adaptive.New
	if watch {
		wrap = adaptive.Watch
	}
	b, err := wrap(sem, adaptive.Config{
		Algorithm: func() adaptive.Algorithm { return &jumpy{rand.New(rand.NewPCG(seed.Add(1), 7))} },
		Max:       stressMaxLimit,
		Window:    adaptive.Window{MinDuration: 1, MaxDuration: 1, MinSamples: 1},
	}, adaptive.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, b)
	defer b.Stop()

	var (
		stop                      atomic.Bool
		violations                atomic.Int64
		registered, ran, panicked atomic.Int64
		ops                       atomic.Int64
		firstMu                   sync.Mutex
		first                     []string
		cancels                   [stressWorkers]atomic.Pointer[context.CancelFunc]
	)
	violate := func(format string, args ...any) {
		violations.Add(1)
		firstMu.Lock()
		if len(first) < 5 {
			first = append(first, fmt.Sprintf(format, args...))
		}
		firstMu.Unlock()
	}
	check := func() {
		m := b.Metrics()
		st := b.Stats()
		switch {
		case m.MaxAllowedConcurrentCalls < 1 || m.MaxAllowedConcurrentCalls > stressMaxLimit:
			violate("limit %d outside [1, %d]", m.MaxAllowedConcurrentCalls, stressMaxLimit)
		case m.AvailableConcurrentCalls < 0 || m.AvailableConcurrentCalls > m.MaxAllowedConcurrentCalls:
			violate("available %d outside [0, %d]", m.AvailableConcurrentCalls, m.MaxAllowedConcurrentCalls)
		case m.InFlightCalls > stressMaxLimit:
			violate("%d permits held, more than ever allowed", m.InFlightCalls)
		case st.InFlight < 0 || (!watch && st.InFlight > stressMaxLimit):
			// A watching controller counts a permit given back without an
			// event (AcquirePermission's own release when its context ends
			// as the grant comes) until the next windows reconcile it.
			violate("controller counts %d in flight", st.InFlight)
		}
	}
	// callback is an OnDone callback that owns the permit if err == nil.
	// Callbacks that panic are registered only on acquisitions already
	// granted, so they run on the registering worker: a callback that
	// panics while the Semaphore delivers it to another goroutine can make
	// that goroutine's AcquirePermissionAsync panic and lose its own
	// acquisition (reported to the owner of semaphore.go).
	callback := func(rng *rand.Rand, granted bool) func(error) {
		registered.Add(1)
		kind := rng.IntN(2)
		if granted && rng.IntN(3) == 0 {
			kind = 2
		}
		started := rng.IntN(2) == 0 // finish as the operators do
		return func(err error) {
			ran.Add(1)
			if err != nil {
				return
			}
			switch kind {
			case 0: // re-enter: finish at once (may close a window, change the limit)
				if started {
					b.FinishCallStarted(b.StartCall())
				} else {
					b.FinishCall()
				}
			case 1: // block for a while, then give the permit back unused
				for range 20 {
					runtime.Gosched()
				}
				b.ReleasePermission()
			case 2: // give the permit back, then panic
				b.FinishCall()
				panicked.Add(1)
				panic(errStressPanic{})
			}
		}
	}

	worker := func(id int) {
		// Not seeded from time.Now: the bubble's fake clock would give
		// every run the same seeds.
		rng := rand.New(rand.NewPCG(rand.Uint64(), uint64(id)))
		var pending []*bulkhead.Acquisition // plain acquisitions whose permit (if granted) we own
		var calls []adaptive.Call
		giveBack := func(a *bulkhead.Acquisition) {
			if a.Cancel() {
				return
			}
			<-a.Done()
			if a.Err() == nil {
				switch rng.IntN(3) {
				case 0:
					b.FinishCall()
				case 1: // as the operators do (a late start: another grant's, maybe)
					b.FinishCallStarted(b.StartCall())
				default:
					b.ReleasePermission()
				}
			}
		}
		op := func() {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(errStressPanic); !ok {
						panic(r)
					}
				}
			}()
			switch rng.IntN(8) {
			case 0:
				if c, ok := b.TryAcquire(); ok {
					calls = append(calls, c)
				}
			case 1:
				if len(calls) > 0 {
					c := calls[len(calls)-1]
					calls = calls[:len(calls)-1]
					switch rng.IntN(3) {
					case 0:
						c.Finish(nil)
					case 1:
						c.Finish(context.DeadlineExceeded)
					default:
						c.Release()
					}
				}
			case 2:
				if len(pending) < 1 {
					pending = append(pending, b.AcquirePermissionAsync())
				}
			case 3:
				if len(pending) > 0 {
					i := rng.IntN(len(pending))
					a := pending[i]
					pending = append(pending[:i], pending[i+1:]...)
					giveBack(a)
				}
			case 4:
				a := b.AcquirePermissionAsync()
				a.OnDone(callback(rng, a.Granted()))
			case 5:
				ctx, cancel := context.WithCancel(context.Background())
				cancels[id].Store(&cancel)
				c, err := b.Acquire(ctx)
				cancels[id].Store(nil)
				cancel()
				if err == nil {
					c.Finish(nil)
				} else if !errors.Is(err, bulkhead.ErrBulkheadFull) && !errors.Is(err, context.Canceled) {
					violate("Acquire: unexpected %v", err)
				}
			case 6:
				if c := cancels[rng.IntN(stressWorkers)].Load(); c != nil {
					(*c)()
				}
			case 7:
				b.MarkOverload()
			}
			ops.Add(1)
			check()
		}
		for !stop.Load() {
			op()
			n := ops.Load()
			if n%64 == 0 {
				// Time moves with the operations too, not only with the
				// ticker: at GOMAXPROCS 1 the busy workers leave the
				// ticker a few hundred turns in millions of operations,
				// too few instants for stressWindows windows.
				clock.Advance(20 * time.Microsecond)
			}
			if n >= stressOps && (n >= stressMaxOps || b.Stats().Windows >= stressWindows) {
				stop.Store(true)
			}
		}
		for _, c := range calls {
			c.Finish(nil)
		}
		for _, a := range pending {
			giveBack(a)
		}
	}

	var workers, ticker sync.WaitGroup
	clockStop := make(chan struct{})
	ticker.Go(func() {
		for {
			select {
			case <-clockStop:
				return
			default:
			}
			clock.Advance(20 * time.Microsecond)
			runtime.Gosched()
		}
	})
	for i := range stressWorkers {
		workers.Go(func() { worker(i) })
	}
	workers.Wait()
	close(clockStop)
	ticker.Wait()
	clock.Advance(time.Second) // expire what is still queued
	// Wait for what still runs on fresh delivery goroutines (see the
	// test's doc comment); nothing blocks for good, so this is the end of
	// every callback, not a deadlock.
	synctest.Wait()

	if watch { // let two windows reconcile the releases it could not see
		for range 2 {
			c, ok := b.TryAcquire()
			if !ok {
				t.Fatal("no permit free at the end")
			}
			clock.Advance(time.Millisecond)
			c.Finish(nil)
		}
		synctest.Wait()
	}
	st := b.Stats()
	t.Logf("virtual time %v, %d pending timers, metrics %+v", clock.Now().Sub(epoch), clock.PendingTimers(), sem.Metrics())
	t.Logf("%d operations, %d windows, %d rejections, %d callbacks (%d panicked), limit %d",
		ops.Load(), st.Windows, st.Rejected, ran.Load(), panicked.Load(), st.Limit)
	if n := violations.Load(); n > 0 {
		t.Errorf("%d violations; first: %v", n, first)
	}
	if st.InFlight != 0 {
		t.Errorf("controller counts %d calls in flight at the end", st.InFlight)
	}
	if got := sem.Config().MaxConcurrentCalls; got != st.Limit {
		t.Errorf("limit in force %d, controller applied %d last", got, st.Limit)
	}
	if registered.Load() != ran.Load() {
		t.Errorf("%d callbacks registered, %d ran", registered.Load(), ran.Load())
	}
	if st.Windows < stressWindows {
		t.Errorf("only %d windows: ChangeConfig was not exercised", st.Windows)
	}
}
