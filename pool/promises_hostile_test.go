package pool_test

// Hostile readings of the package's doc promises: each test quotes the
// promise it tries, and tries it at an edge (a task handed to a worker but
// not started, a context already ended, a second Close racing the first, a
// cause of our own, a limit just below NoTimeout).

import (
	"context"
	"errors"
	"fmt"
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

// Future.Cancel: "If a worker already runs the task, Cancel cancels the
// task's context (cause bulkhead.ErrCancelled) and returns false", and
// task.interrupt: "If the worker has not created that context yet, it will
// cancel it as soon as it does". A CallPermitted listener runs on the worker
// after the task left the queue and before its context exists: a Cancel
// there must reach the function's context all the same.
func TestHostileCancelFromTheGrantListenerReachesTheTaskContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
		futures := make(chan *pool.Future[int], 1)
		var cancelled []bool
		remove := p.OnEvent(func(e bulkhead.Event) {
			if e.Type == bulkhead.CallPermitted {
				cancelled = append(cancelled, (<-futures).Cancel())
			}
		})
		defer remove()
		f := pool.Submit(context.Background(), p, func(ctx context.Context) (int, error) {
			select {
			case <-ctx.Done():
				return 1, context.Cause(ctx)
			default:
				return 2, nil // the context was live when the task started
			}
		})
		futures <- f
		v, err := f.Get(context.Background())
		if v != 1 || err != bulkhead.ErrCancelled || !f.Ran() {
			t.Fatalf("Get = %v, %v (ran %v); want the task to run with its context already cancelled (cause ErrCancelled)", v, err, f.Ran())
		}
		if !slices.Equal(cancelled, []bool{false}) {
			t.Fatalf("Cancel from the grant listener returned %v, want [false] (the task had left the queue)", cancelled)
		}
	})
}

// Future.Get: "If ctx ends first it returns the zero T and ctx.Err()". A
// Future already done is not pending: an ended ctx must not hide its
// outcome.
func TestHostileGetWithAnEndedContextOnADoneFutureReturnsTheOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
		f := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 3, nil })
		<-f.Done()
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		for range 2 { // and again: Get does not consume the outcome
			if v, err := f.Get(ended); v != 3 || err != nil {
				t.Fatalf("Get(ended ctx) of a done Future = %v, %v; want 3, nil", v, err)
			}
		}
	})
}

// Future.OnDone: "If the outcome is already decided, cb runs at once on the
// calling goroutine, and a panic of cb propagates to the caller of OnDone"
// (and so does not reach the pool's callback panic handler).
func TestHostileOnDoneAfterTheOutcomePanicsInTheCallerNotTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var handled []any
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1}, pool.WithCallbackPanicHandler(func(v any, _ []byte) { handled = append(handled, v) }))
		f := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 4, nil })
		<-f.Done()
		synctest.Wait()
		var got any
		func() {
			defer func() { got = recover() }()
			f.OnDone(func(int, error) { panic("late callback") })
		}()
		if got != "late callback" {
			t.Fatalf("OnDone on a done Future: recovered %v in the caller, want the callback's panic", got)
		}
		if len(handled) != 0 {
			t.Fatalf("the pool's handler saw %v, want nothing: the panic is the caller's", handled)
		}
	})
}

// Submit: "If ctx ends before a worker starts fn ... the task is withdrawn
// and fn never runs; Err matches bulkhead.ErrCancelled and, for a context,
// wraps context.Cause of it". A cause of the caller's own, on a queued task
// and on a task submitted with an ended context, must come through.
func TestHostileWithdrawalWrapsTheCallersOwnCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout})
		g := newPoolGate(t)
		busy := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 0))
		synctest.Wait()
		why := errors.New("tenant went away")
		ctx, cancel := context.WithCancelCause(context.Background())
		queued := pool.Submit(ctx, p, func(context.Context) (int, error) { panic("must not run") })
		cancel(why)
		<-queued.Done()
		late := pool.Submit(ctx, p, func(context.Context) (int, error) { panic("must not run") })
		for name, f := range map[string]*pool.Future[int]{"queued": queued, "submitted after the end": late} {
			err := f.Err()
			if !errors.Is(err, bulkhead.ErrCancelled) || !errors.Is(err, why) || errors.Is(err, context.Canceled) || f.Ran() {
				t.Fatalf("%s: Err() = %v (ran %v), want a withdrawal wrapping the cause %q (and not context.Canceled)", name, err, f.Ran(), why)
			}
		}
		dctx, dcancel := context.WithDeadlineCause(context.Background(), time.Now().Add(time.Second), why)
		defer dcancel()
		expired := pool.Submit(dctx, p, func(context.Context) (int, error) { panic("must not run") })
		<-expired.Done()
		if err := expired.Err(); !errors.Is(err, why) || !errors.Is(err, bulkhead.ErrCancelled) {
			t.Fatalf("deadline with a cause: Err() = %v, want a withdrawal wrapping %q", err, why)
		}
		g.open()
		if _, err := busy.Get(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// Close: "Close(ctx) with ctx already done cancels at once", and Future:
// the outcome "is decided once, by one compare-and-swap". Two Closes with
// ended contexts racing on a full queue: every queued task is withdrawn
// exactly once (one CallCancelled, each callback once), both Closes return
// ctx.Err() or (once the pool stopped) nil, and the running task's context ends with cause ErrClosed.
func TestHostileTwoCancellingClosesWithdrawEachQueuedTaskOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const queued = 4
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: queued, MaxQueueWait: bulkhead.NoTimeout})
		events := testkit.RecordEvents(t, p)
		running := pool.Submit(context.Background(), p, func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, context.Cause(ctx)
		})
		synctest.Wait()
		var mu sync.Mutex
		calls := make([]int, queued)
		for i := range queued {
			f := pool.Submit(context.Background(), p, func(context.Context) (int, error) { panic("must not run") })
			f.OnDone(func(_ int, err error) {
				if !errors.Is(err, pool.ErrClosed) || !errors.Is(err, bulkhead.ErrCancelled) {
					t.Errorf("queued task %d: callback saw %v, want a withdrawal by Close", i, err)
				}
				mu.Lock()
				calls[i]++
				mu.Unlock()
			})
		}
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Go(func() { errs[i] = p.Close(ended) })
		}
		wg.Wait()
		// The first Close to look finds the task running and gives up; the
		// other may find the pool already stopped ("returns at once if the
		// pool has already stopped"), as the running task honours its context.
		if (errs[0] != context.Canceled && errs[1] != context.Canceled) ||
			(errs[0] != nil && errs[0] != context.Canceled) || (errs[1] != nil && errs[1] != context.Canceled) {
			t.Fatalf("Closes = %v, want context.Canceled from one at least, nil or context.Canceled from the other", errs)
		}
		if _, err := running.Get(context.Background()); err != pool.ErrClosed {
			t.Fatalf("running task ended with %v, want its context's cause ErrClosed", err)
		}
		if err := p.Close(context.Background()); err != nil {
			t.Fatalf("third Close = %v, want nil once the running task returned", err)
		}
		if !slices.Equal(calls, []int{1, 1, 1, 1}) {
			t.Fatalf("callbacks ran %v times per queued task, want once each", calls)
		}
		if n := events.Count(bulkhead.CallCancelled); n != queued {
			t.Fatalf("%d CallCancelled, want %d (one per queued task): %v", n, queued, events.Strings())
		}
	})
}

// Submit: "A closed pool rejects with ErrClosed", and OnEvent: "A task
// refused because the pool is closed ... publishes nothing". Also when the
// closed pool's last worker is still busy (Close gave up on it).
func TestHostileSubmitToAClosedPoolIsRefusedSilentlyWhileATaskStillRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 2, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout})
		stubborn := make(chan struct{})
		running := pool.Submit(context.Background(), p, func(context.Context) (int, error) {
			<-stubborn // ignores its context
			return 5, nil
		})
		synctest.Wait()
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		if err := p.Close(ended); err != context.Canceled {
			t.Fatalf("Close = %v, want context.Canceled", err)
		}
		events := testkit.RecordEvents(t, p)
		ran := false
		f := pool.Submit(context.Background(), p, func(context.Context) (int, error) { ran = true; return 0, nil })
		if f.Err() != pool.ErrClosed || f.Ran() {
			t.Fatalf("Submit after Close: Err() = %v (ran %v), want ErrClosed at once", f.Err(), f.Ran())
		}
		close(stubborn)
		if v, err := running.Get(context.Background()); v != 5 || err != nil {
			t.Fatalf("the task that ignored its context: %v, %v; want it to run to its end", v, err)
		}
		if err := p.Close(context.Background()); err != nil {
			t.Fatalf("Close again = %v", err)
		}
		if ran || len(events.Strings()) != 1 || events.Strings()[0] != "finished" {
			t.Fatalf("after Close: refused task ran %v, events %v; want it never run and only the running task's finished", ran, events.Strings())
		}
	})
}

// Config.MaxQueueWait and KeepAlive: only bulkhead.NoTimeout means no bound,
// so a finite limit just below it must be a (long) bound that neither
// overflows into "expired at once" nor arms anything that fires early.
func TestHostileLimitsJustBelowNoTimeoutDoNotOverflow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		huge := bulkhead.NoTimeout - 1
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 2, CoreWorkers: 1, QueueCapacity: 1, KeepAlive: huge, MaxQueueWait: huge})
		g := newPoolGate(t)
		time.Sleep(time.Hour) // the epoch is an hour behind: deadlines are offsets from it
		a := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		b := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 2))
		c := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 3, nil })
		synctest.Wait()
		time.Sleep(1000 * time.Hour)
		synctest.Wait()
		if err := c.Err(); err != bulkhead.ErrPending {
			t.Fatalf("queued task after 1000h of a finite but huge MaxQueueWait: %v, want still pending", err)
		}
		g.open()
		for i, f := range []*pool.Future[int]{a, b, c} {
			if v, err := f.Get(context.Background()); v != i+1 || err != nil {
				t.Fatalf("task %d: %v, %v", i+1, v, err)
			}
		}
		synctest.Wait()
		time.Sleep(1000 * time.Hour)
		synctest.Wait()
		if m := p.Metrics(); m.PoolSize != 2 {
			t.Fatalf("%d workers after 1000h idle with a huge KeepAlive, want 2 (none retired)", m.PoolSize)
		}
	})
}

// OnEvent: "returns a func that unregisters it (idempotent)": a second call
// of one remover must not unregister another listener.
func TestHostileOnEventRemoverTwiceLeavesTheOtherListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
		var first, second int
		remove := p.OnEvent(func(bulkhead.Event) { first++ })
		defer p.OnEvent(func(bulkhead.Event) { second++ })()
		remove()
		remove()
		if _, err := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 0, nil }).Get(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if first != 0 || second != 2 {
			t.Fatalf("removed listener saw %d events, kept one %d; want 0 and 2", first, second)
		}
	})
}

// Registry.Close: "closes every pool the registry holds". The catch-all of
// WithMaxPools is one of them (MetricsSource lists it): after Close it must
// refuse tasks and keep no worker, even a core worker that never retires.
func TestHostileRegistryCloseClosesTheCatchAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		keep := pool.Config{MaxWorkers: 1, CoreWorkers: 1, KeepAlive: bulkhead.NoTimeout}
		r, err := pool.NewRegistry(keep, pool.WithMaxPools(1, keep))
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"own", "overflow"} {
			if _, err := pool.SubmitKeyed(context.Background(), r, key, pool.CallOptions{}, func(context.Context) (int, error) { return 0, nil }).Get(context.Background()); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
		}
		if st := r.Stats(); st.CatchAllCalls != 1 {
			t.Fatalf("%+v: want the second key on the catch-all", st)
		}
		if err := r.Close(context.Background()); err != nil {
			t.Fatalf("Registry.Close = %v", err)
		}
		f := pool.SubmitKeyed(context.Background(), r, "third", pool.CallOptions{}, func(context.Context) (int, error) { return 0, nil })
		if err := f.Err(); err != pool.ErrClosed {
			t.Fatalf("SubmitKeyed to the catch-all after Registry.Close: %v, want ErrClosed", err)
		}
		for _, p := range r.All() {
			if m := p.Metrics(); m.PoolSize != 0 {
				t.Fatalf("pool %q keeps %d workers after Registry.Close", p.Name(), m.PoolSize)
			}
		}
		synctest.Wait() // the core workers' goroutines have returned: the bubble would not end otherwise
	})
}

// Registry.Close: "with the semantics of Pool.Close, and returns their
// errors joined ... The pools stay in the registry, closed". With a context
// that ends while one pool's task ignores it: the error names that pool only
// and matches ctx.Err(); both pools stay, closed.
func TestHostileRegistryCloseThatGivesUpNamesThePoolAndKeepsItRegistered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := pool.NewRegistry(pool.Config{MaxWorkers: 1})
		if err != nil {
			t.Fatal(err)
		}
		slow, err := r.Get("slow")
		if err != nil {
			t.Fatal(err)
		}
		quick, err := r.Get("quick")
		if err != nil {
			t.Fatal(err)
		}
		stubborn := make(chan struct{})
		running := pool.Submit(context.Background(), slow, func(context.Context) (int, error) { <-stubborn; return 0, nil })
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = r.Close(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || err.Error() != `pool "slow": context deadline exceeded` {
			t.Fatalf("Registry.Close = %v, want only pool \"slow\"'s DeadlineExceeded", err)
		}
		if got := r.All(); !slices.Equal(got, []*pool.Pool{quick, slow}) {
			t.Fatalf("All() after Close = %v, want both pools still there", got)
		}
		for _, p := range []*pool.Pool{quick, slow} {
			if f := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 0, nil }); f.Err() != pool.ErrClosed {
				t.Fatalf("pool %q after Registry.Close: Submit = %v, want ErrClosed", p.Name(), f.Err())
			}
		}
		close(stubborn)
		<-running.Done()
		if err := r.Close(context.Background()); err != nil {
			t.Fatalf("Registry.Close again = %v", err)
		}
	})
}

// Registry.AddConfig: "adds or replaces a named configuration ... Pools
// already created from it keep their configuration".
func TestHostileReplacingAConfigKeepsThePoolsMadeFromIt(t *testing.T) {
	r, err := pool.NewRegistry(pool.Config{MaxWorkers: 1}, pool.WithConfig("c", pool.Config{MaxWorkers: 2}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	before, err := r.GetWithConfig("before", "c")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AddConfig("c", pool.Config{MaxWorkers: 7}); err != nil {
		t.Fatal(err)
	}
	after, err := r.GetWithConfig("after", "c")
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.GetWithConfig("before", "c")
	if err != nil {
		t.Fatal(err)
	}
	if before.Config().MaxWorkers != 2 || again != before || after.Config().MaxWorkers != 7 {
		t.Fatalf("MaxWorkers: pool made before the replacement %d (same pool %v), after %d; want 2, true, 7",
			before.Config().MaxWorkers, again == before, after.Config().MaxWorkers)
	}
}

// Registry.Close: "closes every pool the registry holds", and Pool.Close:
// "From the first Close on, Submit rejects new tasks with ErrClosed". A
// registry closed for shutdown must not hand out a new, open pool
// afterwards: Get of a new name and SubmitKeyed of a new key would start
// workers that nobody closes. Both are refused with ErrClosed, the pools
// already there refuse their tasks, and no worker starts.
func TestHostileAClosedRegistryCreatesNoPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core := pool.Config{MaxWorkers: 1, CoreWorkers: 1, KeepAlive: bulkhead.NoTimeout}
		r, err := pool.NewRegistry(core, pool.WithIdleTimeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.SubmitKeyed(context.Background(), r, "old", pool.CallOptions{}, func(context.Context) (int, error) { return 0, nil }).Get(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if p, err := r.Get("new"); !errors.Is(err, pool.ErrClosed) || p != nil || !strings.Contains(err.Error(), `"new"`) {
			t.Fatalf("Get of a new name after Close = %v, %v; want an error naming it and matching ErrClosed", p, err)
		}
		ran := false
		for _, key := range []string{"old", "fresh"} {
			f := pool.SubmitKeyed(context.Background(), r, key, pool.CallOptions{}, func(context.Context) (int, error) { ran = true; return 0, nil })
			if err := f.Err(); !errors.Is(err, pool.ErrClosed) || f.Ran() {
				t.Fatalf("SubmitKeyed(%q) after Close: Err() = %v, want ErrClosed at once", key, err)
			}
		}
		time.Sleep(2 * time.Minute) // the closed "old" pool is evicted as idle
		synctest.Wait()
		if f := pool.SubmitKeyed(context.Background(), r, "old", pool.CallOptions{}, func(context.Context) (int, error) { ran = true; return 0, nil }); !errors.Is(f.Err(), pool.ErrClosed) {
			t.Fatalf("SubmitKeyed of an evicted key after Close: Err() = %v, want ErrClosed", f.Err())
		}
		if ran {
			t.Fatal("a task submitted after Registry.Close ran")
		}
		for _, p := range r.All() {
			if m := p.Metrics(); m.PoolSize != 0 {
				t.Fatalf("pool %q has %d workers after Registry.Close", p.Name(), m.PoolSize)
			}
		}
	})
}

// WithCallbackPanicHandler: "A nil h restores that default" (the panic is
// raised again on a new goroutine and ends the program). Options apply in
// order, so a handler followed by WithCallbackPanicHandler(nil) must leave
// no handler: the program ends with the callback's panic, and the first
// handler never sees it.
func TestHostileANilCallbackPanicHandlerRestoresTheDefault(t *testing.T) {
	if os.Getenv("POOL_HOSTILE_NIL_HANDLER_CHILD") == "1" {
		p, err := pool.New("legacy-soap", pool.Config{MaxWorkers: 1},
			pool.WithCallbackPanicHandler(func(any, []byte) { fmt.Println("the replaced handler ran") }),
			pool.WithCallbackPanicHandler(nil))
		if err != nil {
			t.Fatal(err)
		}
		registered := make(chan struct{})
		pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-registered; return 1, nil }).
			OnDone(func(int, error) { panic("partner client exploded") })
		close(registered)
		select {} // the default handler ends the program
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHostileANilCallbackPanicHandlerRestoresTheDefault$")
	cmd.Env = append(os.Environ(), "POOL_HOSTILE_NIL_HANDLER_CHILD=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("the program went on after a callback panicked (err %v); output:\n%s", err, out)
	}
	if !strings.Contains(string(out), `pool "legacy-soap": a Future.OnDone callback panicked: partner client exploded`) || strings.Contains(string(out), "the replaced handler ran") {
		t.Fatalf("want the default handler's crash and not the replaced handler; output:\n%s", out)
	}
}

// WithIdleTimeout: "Pools handed out by Get, GetWithConfig or Find are
// pinned and never evicted", and the sweep closes what it evicts. All is not
// in that list: a key's pool listed by All is not pinned, so it is evicted
// and closed under its holder (a Submit to it then gets ErrClosed), while
// one looked up with Find stays, open (All's doc now says so).
func TestHostileAPoolListedByAllIsNotPinnedOneFoundIs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := pool.NewRegistry(pool.Config{MaxWorkers: 1}, pool.WithIdleTimeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close(context.Background()) })
		for _, key := range []string{"listed", "found"} {
			if _, err := pool.SubmitKeyed(context.Background(), r, key, pool.CallOptions{}, func(context.Context) (int, error) { return 0, nil }).Get(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		var listed *pool.Pool
		for _, p := range r.All() {
			if p.Name() == "listed" {
				listed = p
			}
		}
		found, ok := r.Find("found")
		if listed == nil || !ok {
			t.Fatalf("All() has listed: %v; Find(found): %v", listed != nil, ok)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if _, ok := r.Find("listed"); ok {
			t.Fatal("the pool listed by All was not evicted")
		}
		if f := pool.Submit(context.Background(), listed, func(context.Context) (int, error) { return 0, nil }); f.Err() != pool.ErrClosed {
			t.Fatalf("Submit to the evicted pool a holder got from All: %v, want ErrClosed", f.Err())
		}
		if v, err := pool.Submit(context.Background(), found, func(context.Context) (int, error) { return 2, nil }).Get(context.Background()); v != 2 || err != nil {
			t.Fatalf("the pool Find returned: %v, %v; want it pinned and open", v, err)
		}
		if st := r.Stats(); st.Evictions != 1 {
			t.Fatalf("%+v, want exactly the listed pool evicted", st)
		}
	})
}
