package pool_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Regression tests for the pool findings of issue 13: no timer armed while
// nothing waits, a panicking callback neither ends the program silently nor
// costs a worker, and an outcome is visible before any callback runs.

func TestMaxQueueWaitTimerIsStoppedOnceTheQueueEmpties(t *testing.T) {
	for name, empty := range map[string]func(queued *pool.Future[int], cancel context.CancelFunc, busy *poolGate){
		"a worker takes the last queued task": func(_ *pool.Future[int], _ context.CancelFunc, busy *poolGate) { busy.open() },
		"Future.Cancel withdraws it":          func(f *pool.Future[int], _ context.CancelFunc, _ *poolGate) { f.Cancel() },
		"its context ends":                    func(_ *pool.Future[int], cancel context.CancelFunc, _ *poolGate) { cancel() },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clock := testkit.NewVirtualClock(time.Unix(0, 0))
				p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 2, MaxQueueWait: time.Minute}, pool.WithClock(clock))
				busy := newPoolGate(t)
				queuedGate := newPoolGate(t)
				first := pool.Submit(context.Background(), p, poolTaskWaitingOn(busy, 0))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				queued := pool.Submit(ctx, p, poolTaskWaitingOn(queuedGate, 1))
				if n := clock.PendingTimers(); n != 1 {
					t.Fatalf("%d timers with one task queued, want 1 (MaxQueueWait)", n)
				}
				empty(queued, cancel, busy)
				synctest.Wait()
				if d := p.Metrics().QueueDepth; d != 0 {
					t.Fatalf("QueueDepth = %d, want the queue empty", d)
				}
				if n := clock.PendingTimers(); n != 0 {
					t.Fatalf("%d timers armed while nothing waits, want 0", n)
				}
				busy.open()
				queuedGate.open()
				<-first.Done()
				<-queued.Done()
				clock.Advance(time.Hour) // a timer stopped too late must not disturb the pool
			})
		})
	}
}

func TestStoppedWaitTimerThatFiresAnywayDoesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A stopped time.AfterFunc of the bubble never fires, so this pins
		// the generation check with a clock whose Stop fails (the timer had
		// already started, as a real one may): the stale timer must neither
		// expire a later task early nor arm a second timer.
		clock := &lateStopClock{VirtualClock: testkit.NewVirtualClock(time.Unix(0, 0))}
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: time.Minute}, pool.WithClock(clock))
		g := newPoolGate(t)
		busy := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 0))
		early := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		early.Cancel() // empties the queue: the pool stops the timer, which fires anyway
		clock.Advance(30 * time.Second)
		late := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 2))
		clock.Advance(30 * time.Second) // the withdrawn task's deadline: its timer fires
		if err := late.Err(); err != bulkhead.ErrPending {
			t.Fatalf("a task queued 30s ago expired at the deadline of a withdrawn one: %v", err)
		}
		if n := clock.PendingTimers(); n != 1 {
			t.Fatalf("%d timers pending after the stale one fired, want 1 (late's)", n)
		}
		clock.Advance(30 * time.Second)
		var fe *bulkhead.FullError
		if !errors.As(late.Err(), &fe) || fe.Reason != bulkhead.WaitTimeout {
			t.Fatalf("after its own MaxQueueWait: %v, want WaitTimeout", late.Err())
		}
		g.open()
		<-busy.Done()
	})
}

// lateStopClock is a VirtualClock whose timers cannot be stopped: Stop
// reports false and the timer fires, as when it had already started.
type lateStopClock struct{ *testkit.VirtualClock }

func (c *lateStopClock) AfterFunc(d time.Duration, f func()) bulkhead.Timer {
	c.VirtualClock.AfterFunc(d, f)
	return unstoppable{}
}

type unstoppable struct{}

func (unstoppable) Stop() bool { return false }

func TestPanickingCallbackKeepsTheWorkerAndTheOtherCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var panics []any
		var stacks []string
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, CoreWorkers: 1},
			pool.WithCallbackPanicHandler(func(v any, stack []byte) {
				panics = append(panics, v)
				stacks = append(stacks, string(stack))
			}))
		g := newPoolGate(t)
		f := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 7))
		var ran []string
		f.OnDone(func(v int, _ error) { ran = append(ran, "before") })
		f.OnDone(func(int, error) { panic("callback exploded") })
		f.OnDone(func(v int, _ error) { ran = append(ran, "after") })
		f.OnDone(func(int, error) { panic("second callback exploded") })
		g.open()
		<-f.Done()
		synctest.Wait()
		if !slices.Equal(ran, []string{"before", "after"}) {
			t.Fatalf("callbacks ran %v, want before and after exactly once around the panicking one", ran)
		}
		if !slices.Equal(panics, []any{"callback exploded", "second callback exploded"}) || !strings.Contains(stacks[0], "TestPanickingCallbackKeepsTheWorkerAndTheOtherCallbacks") {
			t.Fatalf("handler got %v, want each callback's panic once, in order, with its stack", panics)
		}
		if m := p.Metrics(); m.PoolSize != 1 || m.ActiveWorkers != 0 {
			t.Fatalf("after a panicking callback: %+v, want the worker kept, idle", m)
		}
		if n := poolGoroutines(); n != 1 {
			t.Fatalf("%d pool goroutines, want the one worker", n)
		}
		if v, err := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 8, nil }).Get(context.Background()); v != 8 || err != nil {
			t.Fatalf("the next task: %v, %v", v, err)
		}
	})
}

func TestPanickingCallbackOfOneExpiredTaskDoesNotStrandTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var panics int
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 3, MaxQueueWait: time.Second},
			pool.WithCallbackPanicHandler(func(any, []byte) { panics++ }))
		g := newPoolGate(t)
		busy := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 0))
		var delivered []int
		for i := range 3 {
			f := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, i+1))
			f.OnDone(func(int, error) {
				if i == 0 {
					panic("first callback")
				}
				delivered = append(delivered, i)
			})
		}
		time.Sleep(time.Second) // one timer tick expires all three
		synctest.Wait()
		if !slices.Equal(delivered, []int{1, 2}) || panics != 1 {
			t.Fatalf("delivered %v with %d panic(s), want [1 2] and 1", delivered, panics)
		}
		g.open()
		<-busy.Done()
	})
}

func TestPanickingCallbackWithoutHandlerEndsTheProgramLoudly(t *testing.T) {
	if os.Getenv("POOL_CALLBACK_PANIC_CHILD") == "1" {
		p, err := pool.New("legacy-soap", pool.Config{MaxWorkers: 1})
		if err != nil {
			t.Fatal(err)
		}
		// The task waits until the callback is registered, so that the
		// callback runs on the worker, not here.
		registered := make(chan struct{})
		pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-registered; return 1, nil }).
			OnDone(func(int, error) { panicInCallback() })
		close(registered)
		select {} // the default handler ends the program
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPanickingCallbackWithoutHandlerEndsTheProgramLoudly$")
	cmd.Env = append(os.Environ(), "POOL_CALLBACK_PANIC_CHILD=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("the program went on after a callback panicked (err %v); output:\n%s", err, out)
	}
	for _, want := range []string{`pool "legacy-soap": a Future.OnDone callback panicked: partner client exploded`, "panicInCallback"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the crash does not say %q; output:\n%s", want, out)
		}
	}
}

func panicInCallback() { panic("partner client exploded") }

func TestDoneAndErrReflectTheOutcomeBeforeItsCallbacksRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
		boom := errors.New("boom")
		registered := make(chan struct{}) // so the worker runs the callback
		f := pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-registered; return 3, boom })
		seen := make(chan string, 1)
		f.OnDone(func(int, error) {
			select {
			case <-f.Done():
				seen <- f.Err().Error()
			default:
				seen <- "Done still open inside the callback"
			}
		})
		close(registered)
		if got := <-seen; got != "boom" {
			t.Fatalf("inside the callback: %s", got)
		}
	})
}

// Every outcome a timer tick or a Close decides is published before any of
// their callbacks runs: a callback that waits for another Future of the
// same batch must not wait for ever.
func TestOutcomesDecidedTogetherAreAllVisibleBeforeAnyCallback(t *testing.T) {
	for name, decide := range map[string]func(p *pool.Pool){
		"MaxQueueWait expiry": func(*pool.Pool) { time.Sleep(time.Second) },
		"Close giving up": func(p *pool.Pool) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_ = p.Close(ctx)
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 2, MaxQueueWait: time.Second})
				g := newPoolGate(t)
				busy := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 0))
				a := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
				b := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 2))
				var errOfB error
				a.OnDone(func(int, error) {
					<-b.Done() // b's outcome was decided with a's
					errOfB = b.Err()
				})
				decide(p)
				<-a.Done()
				synctest.Wait()
				if errOfB == nil || errOfB == bulkhead.ErrPending {
					t.Fatalf("a's callback saw b's Err() = %v, want b's outcome", errOfB)
				}
				g.open()
				<-busy.Done()
			})
		})
	}
}

func TestCallbacksOfDifferentWorkersRunConcurrently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 2})
		var wg sync.WaitGroup
		wg.Add(2)
		both := make(chan struct{})
		// The tasks wait until both callbacks are registered, so that each
		// callback runs on its worker, not on this goroutine.
		registered := make(chan struct{})
		for range 2 {
			pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-registered; return 0, nil }).
				OnDone(func(int, error) {
					wg.Done()
					<-both // each callback waits for the other to have started
				})
		}
		close(registered)
		wg.Wait()
		close(both)
	})
}
