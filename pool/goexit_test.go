package pool_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// A task that calls runtime.Goexit (as t.FailNow in a task does) ends its
// worker goroutine whatever the worker defers; these tests pin that the
// pool still publishes the outcome, runs the callbacks and keeps its worker.

func TestTaskGoexitCompletesItsFutureAndKeepsTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// MaxWorkers 1 and no queue wait: a worker lost for good would make
		// every later Submit a NoWait rejection, and Close never drain.
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, CoreWorkers: 1, KeepAlive: time.Hour})
		events := testkit.RecordEvents(t, p)
		g := newPoolGate(t)
		f := pool.Submit(context.Background(), p, func(context.Context) (int, error) {
			<-g.c
			runtime.Goexit()
			return 1, nil
		})
		var got []error
		f.OnDone(func(_ int, err error) { got = append(got, err) })
		g.open()
		synctest.Wait()

		select {
		case <-f.Done():
		default:
			t.Fatal("the Future of a task that called runtime.Goexit is not done")
		}
		err := f.Err()
		var ge *pool.GoexitError
		if !errors.Is(err, pool.ErrGoexit) || !errors.As(err, &ge) {
			t.Fatalf("Err() = %#v, want a *pool.GoexitError matching pool.ErrGoexit", err)
		}
		if !strings.Contains(err.Error(), "runtime.Goexit") {
			t.Fatalf("Err() = %q, want a message naming runtime.Goexit", err)
		}
		if !strings.Contains(string(ge.Stack), "runtime.Goexit") {
			t.Fatalf("GoexitError.Stack does not show the Goexit:\n%s", ge.Stack)
		}
		if errors.Is(err, bulkhead.ErrCancelled) || errors.As(err, new(*pool.PanicError)) {
			t.Fatalf("Err() = %v also matches a withdrawal or a panic", err)
		}
		if !f.Ran() || f.Value() != 0 {
			t.Fatalf("Ran() = %v, Value() = %d, want true (the function ran) and 0", f.Ran(), f.Value())
		}
		if len(got) != 1 || got[0] != err {
			t.Fatalf("callbacks saw %v, want the GoexitError once", got)
		}
		if m := p.Metrics(); m.PoolSize != 1 || m.ActiveWorkers != 0 {
			t.Fatalf("after the Goexit: %+v, want 1 worker, none active", m)
		}
		next := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 2, nil })
		if v, err := next.Get(context.Background()); v != 2 || err != nil {
			t.Fatalf("the next task on a MaxWorkers 1 pool: %d, %v, want 2, nil", v, err)
		}
		synctest.Wait()
		want := []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallFinished, bulkhead.CallPermitted, bulkhead.CallFinished}
		if got := events.Types(); !slices.Equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
		// newTestPool's cleanup closes the pool and checks that it drained.
	})
}

func TestTaskGoexitWithAQueueBehindItRunsTheQueueAndCloseDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := pool.New("p", pool.Config{MaxWorkers: 1, QueueCapacity: 3, MaxQueueWait: bulkhead.NoTimeout})
		if err != nil {
			t.Fatal(err)
		}
		g := newPoolGate(t)
		var fs []*pool.Future[int]
		for i := range 4 {
			fs = append(fs, pool.Submit(context.Background(), p, func(context.Context) (int, error) {
				<-g.c
				if i%2 == 0 {
					runtime.Goexit()
				}
				return i, nil
			}))
		}
		closed := make(chan error, 1)
		go func() { closed <- p.Close(context.Background()) }()
		synctest.Wait()
		g.open()
		if err := <-closed; err != nil {
			t.Fatalf("Close = %v, want nil: it drains", err)
		}
		for i, f := range fs {
			err := f.Err()
			if i%2 == 0 && !errors.Is(err, pool.ErrGoexit) || i%2 == 1 && (err != nil || f.Value() != i) {
				t.Fatalf("task %d: %d, %v", i, f.Value(), err)
			}
		}
		if m := p.Metrics(); m.PoolSize != 0 || m.ActiveWorkers != 0 || m.QueueDepth != 0 {
			t.Fatalf("after Close: %+v", m)
		}
	})
}

// goexitOnce returns a func that calls runtime.Goexit the first time it is
// called and does nothing after.
func goexitOnce() func() {
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			runtime.Goexit()
		}
	}
}

func TestListenerGoexitOnAWorkerLosesNoOutcome(t *testing.T) {
	for _, on := range []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallFinished} {
		t.Run(on.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
				exit := goexitOnce()
				var seen []bulkhead.EventType
				p.OnEvent(func(e bulkhead.Event) {
					if e.Type == on {
						exit()
					}
				})
				p.OnEvent(func(e bulkhead.Event) { seen = append(seen, e.Type) })
				ran := 0
				f := pool.Submit(context.Background(), p, func(context.Context) (int, error) { ran++; return 1, nil })
				synctest.Wait()
				if v, err := f.Value(), f.Err(); !f.Ran() || v != 1 || err != nil || ran != 1 {
					t.Fatalf("after a listener's Goexit on %v: ran %d times, %d, %v", on, ran, v, err)
				}
				// The listener after the one that exited missed that event;
				// every later one reaches both.
				if v, err := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 2, nil }).Get(context.Background()); v != 2 || err != nil {
					t.Fatalf("next task: %d, %v", v, err)
				}
				synctest.Wait()
				if n := len(seen); n != 3 {
					t.Fatalf("second listener saw %v, want 3 events (one missed)", seen)
				}
			})
		})
	}
}

func TestCallbackGoexitOnAWorkerRunsTheOtherCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var handled []any
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1}, pool.WithCallbackPanicHandler(func(v any, _ []byte) { handled = append(handled, v) }))
		g := newPoolGate(t)
		f := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		var order []string
		f.OnDone(func(int, error) { order = append(order, "a"); panic("a") })
		f.OnDone(func(int, error) { order = append(order, "b"); runtime.Goexit() })
		f.OnDone(func(int, error) { order = append(order, "c") })
		g.open()
		synctest.Wait()
		if !slices.Equal(order, []string{"a", "b", "c"}) {
			t.Fatalf("callbacks ran %v, want a, b, c once each", order)
		}
		if !slices.Equal(handled, []any{"a"}) {
			t.Fatalf("handler got %v, want the panic of a", handled)
		}
		if v, err := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 2, nil }).Get(context.Background()); v != 2 || err != nil {
			t.Fatalf("next task: %d, %v", v, err)
		}
	})
}

func TestPanicHandlerGoexitOnAWorkerHandsOnTheOtherPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exit := goexitOnce()
		var handled []any
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, CoreWorkers: 1, KeepAlive: time.Hour}, pool.WithCallbackPanicHandler(func(v any, _ []byte) {
			handled = append(handled, v)
			exit() // as t.Fatal in a handler does
		}))
		g := newPoolGate(t)
		f := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		f.OnDone(func(int, error) { panic("a") })
		f.OnDone(func(int, error) { panic("b") })
		g.open()
		synctest.Wait()
		if !slices.Equal(handled, []any{"a", "b"}) {
			t.Fatalf("handler got %v, want a then b", handled)
		}
		if m := p.Metrics(); m.PoolSize != 1 || m.ActiveWorkers != 0 {
			t.Fatalf("after the handler's Goexit: %+v", m)
		}
		if v, err := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 2, nil }).Get(context.Background()); v != 2 || err != nil {
			t.Fatalf("next task: %d, %v", v, err)
		}
	})
}

// The goroutines that decide outcomes off a worker (the caller of Cancel
// and Close, the timer, the AfterFunc of a context) end with a Goexit of
// user code, as Goexit demands; what they had still to deliver is
// delivered by another goroutine.

func TestGoexitWhileDeliveringABatchLosesNoOutcome(t *testing.T) {
	for name, decide := range map[string]func(p *pool.Pool){
		"MaxQueueWait expiry": func(*pool.Pool) { time.Sleep(time.Second) },
		"Close giving up": func(p *pool.Pool) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			go p.Close(ctx)
		},
	} {
		for _, in := range []string{"listener", "callback"} {
			t.Run(name+"/"+in, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 3, MaxQueueWait: time.Second})
					exit := goexitOnce()
					if in == "listener" {
						p.OnEvent(func(e bulkhead.Event) {
							if e.Type == bulkhead.CallRejected || e.Type == bulkhead.CallCancelled {
								exit()
							}
						})
					}
					g := newPoolGate(t)
					pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 0))
					synctest.Wait()
					var mu sync.Mutex
					calls := map[int]int{}
					var queued []*pool.Future[int]
					for i := range 3 {
						f := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, i))
						if in == "callback" {
							f.OnDone(func(int, error) { exit() })
						}
						f.OnDone(func(int, error) { mu.Lock(); calls[i]++; mu.Unlock() })
						queued = append(queued, f)
					}
					decide(p)
					synctest.Wait()
					for i, f := range queued {
						select {
						case <-f.Done():
						default:
							t.Fatalf("queued task %d is not done after a Goexit in a %s", i, in)
						}
						if f.Ran() {
							t.Fatalf("queued task %d ran", i)
						}
						if calls[i] != 1 {
							t.Fatalf("task %d: counting callback ran %d times, want 1", i, calls[i])
						}
					}
					g.open()
				})
			})
		}
	}
}

func TestGoexitInACancelCallbackOrListenerLosesNoOutcome(t *testing.T) {
	for _, in := range []string{"listener", "callback"} {
		t.Run(in, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 2, MaxQueueWait: bulkhead.NoTimeout})
				exit := goexitOnce()
				if in == "listener" {
					p.OnEvent(func(e bulkhead.Event) {
						if e.Type == bulkhead.CallCancelled {
							exit()
						}
					})
				}
				g := newPoolGate(t)
				pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 0))
				synctest.Wait()
				ctx, cancel := context.WithCancel(context.Background())
				byCtx := pool.Submit(ctx, p, poolTaskWaitingOn(g, 1))
				byCancel := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 2))
				calls := 0
				for _, f := range []*pool.Future[int]{byCtx, byCancel} {
					if in == "callback" {
						f.OnDone(func(int, error) { exit() })
					}
					f.OnDone(func(int, error) { calls++ })
				}
				cancel() // withdraws byCtx on the AfterFunc goroutine
				synctest.Wait()
				done := make(chan struct{})
				go func() {
					defer close(done)
					byCancel.Cancel()
				}()
				<-done
				synctest.Wait()
				for i, f := range []*pool.Future[int]{byCtx, byCancel} {
					if !errors.Is(f.Err(), bulkhead.ErrCancelled) {
						t.Fatalf("task %d: Err() = %v, want withdrawn", i, f.Err())
					}
				}
				if calls != 2 {
					t.Fatalf("counting callbacks ran %d times, want 2", calls)
				}
				g.open()
			})
		})
	}
}

func TestListenerGoexitWhenAWorkerWithdrawsATaskLosesNoOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, CoreWorkers: 1, KeepAlive: time.Hour})
		exit := goexitOnce()
		p.OnEvent(func(e bulkhead.Event) {
			if e.Type == bulkhead.CallCancelled {
				exit() // on the worker, which found the task's context ended
			}
		})
		ctx := &poolCtxEndingAfterSubmit{Context: context.Background()}
		f := pool.Submit(ctx, p, func(context.Context) (int, error) { panic("must not run") })
		calls := 0
		f.OnDone(func(int, error) { calls++ })
		synctest.Wait()
		if err := f.Err(); !errors.Is(err, bulkhead.ErrCancelled) || f.Ran() {
			t.Fatalf("Err() = %v (ran %v), want a withdrawal", err, f.Ran())
		}
		if calls != 1 {
			t.Fatalf("callback ran %d times, want 1", calls)
		}
		if m := p.Metrics(); m.PoolSize != 1 || m.ActiveWorkers != 0 {
			t.Fatalf("after the Goexit: %+v", m)
		}
		if v, err := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 2, nil }).Get(context.Background()); v != 2 || err != nil {
			t.Fatalf("next task: %d, %v", v, err)
		}
	})
}
