package pool_test

import (
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// TestPoolStress hammers submission, dispatch, withdrawal (context end and
// Cancel), MaxQueueWait expiry, keep-alive retirement and Close from many
// goroutines on a virtual clock that the metrics monitor advances without
// pause (KeepAlive and MaxQueueWait expire on it), and checks the
// invariants: never more than
// MaxWorkers tasks run, the queue never exceeds its capacity, every Future
// is done exactly once with an outcome that agrees with the events, and
// nothing is left after Close. The wild-callbacks cases add to every Future
// a callback, before the counting one, that panics, re-enters the pool
// (Submit from the callback, Cancel of a sibling, OnDone on its own Future)
// blocks for a while or calls runtime.Goexit, on whichever goroutine
// delivers, and makes some tasks call runtime.Goexit: each Future's
// callbacks must still run exactly once, every panic reach the handler, and
// the pool keep its workers.
func TestPoolStress(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  pool.Config
	}{
		{"keepalive-0", pool.Config{MaxWorkers: 4, CoreWorkers: 1, QueueCapacity: 8, MaxQueueWait: bulkhead.NoTimeout}},
		{"keepalive-timer", pool.Config{MaxWorkers: 4, CoreWorkers: 0, QueueCapacity: 8, KeepAlive: 20 * time.Microsecond, MaxQueueWait: 50 * time.Microsecond}},
		{"no-queue", pool.Config{MaxWorkers: 3, CoreWorkers: 3, KeepAlive: time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) { poolStress(t, tc.cfg, false, false) })
		t.Run(tc.name+"/wild-callbacks", func(t *testing.T) { poolStress(t, tc.cfg, false, true) })
	}
	closing := pool.Config{MaxWorkers: 4, CoreWorkers: 2, QueueCapacity: 8, KeepAlive: time.Hour, MaxQueueWait: bulkhead.NoTimeout}
	t.Run("close-while-hammering", func(t *testing.T) { poolStress(t, closing, true, false) })
	t.Run("close-while-hammering/wild-callbacks", func(t *testing.T) { poolStress(t, closing, true, true) })
}

// poolStressTasks is how many tasks each of TestPoolStress's submitters
// submits in each case: 400 in make test (3,200 a case; every case still
// sees tasks run, withdrawn and rejected, refusals after Close, Goexits and
// callback panics, which the test requires or logs), 1200 or more in
// make stress (POOL_STRESS_TASKS, 4800 by default).
var poolStressTasks = flag.Int("pool.stresstasks", 400, "TestPoolStress: tasks per submitter in each case (a multiple of 4)")

func poolStress(t *testing.T, cfg pool.Config, closeEarly, wild bool) {
	const (
		submitters = 8
		batch      = 4 // futures in flight per submitter
	)
	perWorker := *poolStressTasks / batch * batch
	var panicsRaised, panicsHandled atomic.Int64
	handledSignal := make(chan struct{}, 1)
	clock := testkit.NewVirtualClock(time.Unix(1_700_000_000, 0))
	p, err := pool.New("stress", cfg, pool.WithClock(clock), pool.WithCallbackPanicHandler(func(v any, _ []byte) {
		if v == "stress callback" {
			panicsHandled.Add(1)
			select {
			case handledSignal <- struct{}{}:
			default:
			}
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	var reentrantMu sync.Mutex
	var reentrant []*pool.Future[int] // submitted from callbacks
	submitFromCallback := func() {
		f := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 0, nil })
		reentrantMu.Lock()
		reentrant = append(reentrant, f)
		reentrantMu.Unlock()
	}
	var permitted, finished, cancelledEvents, rejectedEvents atomic.Int64
	remove := p.OnEvent(func(e bulkhead.Event) {
		switch e.Type {
		case bulkhead.CallPermitted:
			permitted.Add(1)
		case bulkhead.CallFinished:
			finished.Add(1)
		case bulkhead.CallCancelled:
			cancelledEvents.Add(1)
		case bulkhead.CallRejected:
			rejectedEvents.Add(1)
		}
	})
	defer remove()

	var running, maxRunning, ran, goexits, withdrawn, rejected, callbacks atomic.Int64
	// delivered counts down as each submitted Future's last callback (the
	// counting one) runs. Done is closed before a Future's callbacks run, on
	// whichever goroutine decided it, and a worker, a timer or an AfterFunc
	// goroutine may still be inside them when the submitter sees Done: a
	// callback may submit a task (see reentrant) after the submitter has
	// counted its Future. Callbacks run in registration order, so once the
	// counting one ran, the wild one before it has returned.
	var delivered sync.WaitGroup
	var violations atomic.Int64
	stopMonitor := make(chan struct{})
	monitorDone := make(chan struct{})
	go func() { // samples the metrics and moves the clock while the hammer runs
		defer close(monitorDone)
		for {
			select {
			case <-stopMonitor:
				return
			default:
			}
			clock.Advance(5 * time.Microsecond) // fires KeepAlive and MaxQueueWait timers here
			m := p.Metrics()
			if m.QueueDepth > cfg.QueueCapacity || m.PoolSize > cfg.MaxWorkers || m.ActiveWorkers > m.PoolSize || m.RemainingQueueCapacity < 0 {
				violations.Add(1)
			}
			// Yield: this loop never blocks, and at GOMAXPROCS 1 each
			// runtime.Gosched of the tasks and callbacks below otherwise
			// waited for it to be preempted (a 10 ms time slice): the
			// wild-callbacks cases took 80-100 s each (283 s in all).
			runtime.Gosched()
		}
	}()

	var wg sync.WaitGroup
	var closedRejections atomic.Int64
	// closed is closed once Close has returned (closeEarly). Each
	// submitter's last batch waits for it, so that some tasks are refused
	// after Close whatever the scheduler does: without that wait, a
	// schedule that ran the submitters to their end before the closer
	// noticed the third of the outcomes refused none.
	closed := make(chan struct{})
	if closeEarly {
		// Close cancels at once while the submitters are busy: queued tasks
		// are withdrawn, running ones cancelled, later ones refused. It
		// waits for a third of the outcomes, or for every submitter to
		// reach its last batch (with few tasks per submitter).
		enough := min(int64(submitters*perWorker/3), int64(submitters*(perWorker-batch)))
		wg.Go(func() {
			defer close(closed)
			for ran.Load()+withdrawn.Load()+rejected.Load() < enough {
				runtime.Gosched()
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_ = p.Close(ctx)
		})
	}
	for g := range submitters {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			for b := range perWorker / batch {
				if closeEarly && b == perWorker/batch-1 {
					<-closed // this batch is refused (see closed)
				}
				var fs [batch]*pool.Future[int]
				var cancels [batch]context.CancelFunc
				for i := range batch {
					ctx, cancel := context.WithCancel(context.Background())
					cancels[i] = cancel
					goexit := wild && rng.IntN(8) == 0
					f := pool.Submit(ctx, p, func(ctx context.Context) (int, error) {
						n := running.Add(1)
						for {
							m := maxRunning.Load()
							if n <= m || maxRunning.CompareAndSwap(m, n) {
								break
							}
						}
						if n > int64(cfg.MaxWorkers) {
							violations.Add(1)
						}
						if goexit {
							running.Add(-1)
							runtime.Goexit() // as t.FailNow in a task does
						}
						for range poolBusyWork(n) {
							if ctx.Err() != nil {
								break
							}
							runtime.Gosched()
						}
						running.Add(-1)
						return int(n), nil
					})
					if wild {
						sibling := i - 1 // already submitted, in the same batch
						switch rng.IntN(6) {
						case 0:
							panicsRaised.Add(1)
							func() {
								// A Future already done runs the callback at
								// once: its panic propagates to OnDone's caller.
								defer func() {
									if recover() == "stress callback" {
										panicsHandled.Add(1)
									}
								}()
								f.OnDone(func(int, error) { panic("stress callback") })
							}()
						case 1:
							f.OnDone(func(int, error) { submitFromCallback() })
						case 2:
							if sibling >= 0 {
								s := fs[sibling]
								f.OnDone(func(int, error) { s.Cancel() })
							}
						case 3:
							f.OnDone(func(int, error) {
								for range 50 {
									runtime.Gosched() // a callback that takes its time
								}
							})
						case 4:
							f.OnDone(func(int, error) {
								f.OnDone(func(int, error) {}) // runs at once, on this goroutine
							})
						case 5:
							// Goexit ends the worker that delivers a task that
							// ran; not the submitter's goroutine (a Future
							// already done runs the callback inside OnDone,
							// and Cancel runs those of a withdrawn task).
							var registering atomic.Bool
							registering.Store(true)
							f.OnDone(func(int, error) {
								if f.Ran() && !registering.Load() {
									runtime.Goexit()
								}
							})
							registering.Store(false)
						}
					}
					var once atomic.Int32
					delivered.Add(1)
					f.OnDone(func(int, error) {
						if once.Add(1) != 1 {
							violations.Add(1)
							return
						}
						callbacks.Add(1)
						delivered.Done()
					})
					fs[i] = f
				}
				for i, f := range fs {
					switch rng.IntN(5) {
					case 0:
						cancels[i]() // races with dispatch: withdraws or cancels the run
					case 1:
						f.Cancel()
					case 2:
						go cancels[i]()
					}
				}
				for i, f := range fs {
					<-f.Done()
					cancels[i]()
					switch err := f.Err(); {
					case f.Ran():
						ran.Add(1)
						if errors.Is(err, pool.ErrGoexit) {
							goexits.Add(1)
						} else if err != nil {
							t.Errorf("a task that ran: Err() = %v", err)
						}
					case errors.Is(err, bulkhead.ErrCancelled):
						withdrawn.Add(1)
					case errors.Is(err, bulkhead.ErrBulkheadFull):
						rejected.Add(1)
					case err == pool.ErrClosed:
						closedRejections.Add(1)
					default:
						t.Errorf("unexpected outcome %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	// Every Future is done; wait for their callbacks too, so that every
	// task submitted from a callback is in reentrant before it is read.
	delivered.Wait()
	// The tasks submitted from callbacks are outcomes too.
	reentrantMu.Lock()
	extra := reentrant
	reentrantMu.Unlock()
	for _, f := range extra {
		<-f.Done()
		switch err := f.Err(); {
		case f.Ran():
			ran.Add(1)
		case errors.Is(err, bulkhead.ErrCancelled):
			withdrawn.Add(1)
		case errors.Is(err, bulkhead.ErrBulkheadFull):
			rejected.Add(1)
		case err == pool.ErrClosed:
			closedRejections.Add(1)
		default:
			t.Errorf("unexpected outcome %v", err)
		}
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	close(stopMonitor)
	<-monitorDone

	total := int64(submitters*perWorker) + int64(len(extra))
	// A callback's panic reaches the handler after all the callbacks of its
	// Future ran, on the goroutine that ran them: the counting callback above
	// may have run before it. Wait for the handler, then require exactly as
	// many as were raised.
	for panicsHandled.Load() < panicsRaised.Load() {
		<-handledSignal
	}
	if panicsHandled.Load() != panicsRaised.Load() {
		t.Errorf("%d callback panics reached the handler, %d were raised", panicsHandled.Load(), panicsRaised.Load())
	}
	if closeEarly && closedRejections.Load() == 0 {
		t.Errorf("no task was refused after Close")
	}
	if got := ran.Load() + withdrawn.Load() + rejected.Load() + closedRejections.Load(); got != total {
		t.Errorf("%d outcomes for %d tasks", got, total)
	}
	if v := violations.Load(); v != 0 {
		t.Errorf("%d invariant violations (max running %d, MaxWorkers %d)", v, maxRunning.Load(), cfg.MaxWorkers)
	}
	if c := callbacks.Load(); c != int64(submitters*perWorker) {
		t.Errorf("%d callbacks for %d tasks", c, total)
	}
	if permitted.Load() != ran.Load() || finished.Load() != ran.Load() {
		t.Errorf("%d permitted, %d finished events for %d tasks that ran", permitted.Load(), finished.Load(), ran.Load())
	}
	// Tasks withdrawn because their context was already done publish no
	// event, so CallCancelled may count fewer.
	if cancelledEvents.Load() > withdrawn.Load() || rejectedEvents.Load() != rejected.Load() {
		t.Errorf("%d cancelled, %d rejected events for %d withdrawn, %d rejected tasks", cancelledEvents.Load(), rejectedEvents.Load(), withdrawn.Load(), rejected.Load())
	}
	if m := p.Metrics(); m.PoolSize != 0 || m.ActiveWorkers != 0 || m.QueueDepth != 0 {
		t.Errorf("after Close: %+v", m)
	}
	if wild && goexits.Load() == 0 {
		t.Errorf("no task called runtime.Goexit")
	}
	t.Logf("ran %d (%d of them called runtime.Goexit), withdrawn %d, rejected %d, refused after Close %d, max running %d, submitted from callbacks %d, callback panics %d",
		ran.Load(), goexits.Load(), withdrawn.Load(), rejected.Load(), closedRejections.Load(), maxRunning.Load(), len(extra), panicsHandled.Load())
}

// poolBusyWork is a small amount of work that depends on n, so tasks overlap.
func poolBusyWork(n int64) int { return int(n%3) * 3 }
