package pool_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestCtxEndingWhileQueuedWithdrawsTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout})
		events := testkit.RecordEvents(t, p)
		g := newPoolGate(t)
		busy := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		ctx, cancel := context.WithCancel(context.Background())
		var ran atomic.Bool
		queued := pool.Submit(ctx, p, func(context.Context) (int, error) { ran.Store(true); return 2, nil })
		synctest.Wait()
		if d := p.Metrics().QueueDepth; d != 1 {
			t.Fatalf("QueueDepth = %d, want 1", d)
		}
		cancel()
		<-queued.Done()
		err := queued.Err()
		if !errors.Is(err, bulkhead.ErrCancelled) || !errors.Is(err, context.Canceled) || errors.Is(err, bulkhead.ErrBulkheadFull) {
			t.Fatalf("Err() = %v, want one matching ErrCancelled and context.Canceled", err)
		}
		if msg := err.Error(); msg != `pool "p": task withdrawn before it ran: context canceled` {
			t.Fatalf("message %q", msg)
		}
		if queued.Ran() {
			t.Fatal("a withdrawn task reports it ran")
		}
		if d := p.Metrics().QueueDepth; d != 0 {
			t.Fatalf("QueueDepth = %d after the withdrawal, want 0", d)
		}
		g.open()
		<-busy.Done()
		synctest.Wait()
		if ran.Load() {
			t.Fatal("the withdrawn task ran")
		}
		want := []string{"permitted", "cancelled", "finished"}
		if got := events.Strings(); !slices.Equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
	})
}

func TestCtxDeadlineBoundsTheWaitInTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout})
		g := newPoolGate(t)
		busy := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		queued := pool.Submit(ctx, p, poolTaskWaitingOn(g, 2))
		<-queued.Done()
		if waited := time.Since(start); waited != 50*time.Millisecond {
			t.Fatalf("withdrawn after %v, want exactly the deadline (50ms)", waited)
		}
		if err := queued.Err(); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, bulkhead.ErrCancelled) {
			t.Fatalf("Err() = %v, want ErrCancelled wrapping context.DeadlineExceeded", err)
		}
		g.open()
		<-busy.Done()
	})
}

func TestMaxQueueWaitRejectsWithWaitTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 3, MaxQueueWait: time.Second})
		events := testkit.RecordEvents(t, p)
		g := newPoolGate(t)
		busy := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 0))
		start := time.Now()
		early := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		time.Sleep(300 * time.Millisecond)
		late := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 2))
		<-early.Done()
		if waited := time.Since(start); waited != time.Second {
			t.Fatalf("first queued task expired after %v, want 1s", waited)
		}
		var fe *bulkhead.FullError
		if !errors.As(early.Err(), &fe) || fe.Reason != bulkhead.WaitTimeout {
			t.Fatalf("Err() = %v, want *FullError WaitTimeout", early.Err())
		}
		if late.Err() != bulkhead.ErrPending {
			t.Fatalf("second queued task done before its own deadline: %v", late.Err())
		}
		<-late.Done()
		if waited := time.Since(start); waited != 1300*time.Millisecond {
			t.Fatalf("second queued task expired after %v, want 1.3s", waited)
		}
		g.open()
		if _, err := busy.Get(context.Background()); err != nil {
			t.Fatalf("MaxQueueWait cut the running task short: %v", err)
		}
		synctest.Wait()
		want := []string{"permitted", "rejected(wait timeout)", "rejected(wait timeout)", "finished"}
		if got := events.Strings(); !slices.Equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
	})
}

func TestMaxQueueWaitDoesNotLimitRunningTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: time.Second})
		g := newPoolGate(t)
		busy := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 0))
		next := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
		time.Sleep(500 * time.Millisecond)
		g.open() // next leaves the queue before its deadline, then runs
		if v, err := next.Get(context.Background()); v != 1 || err != nil {
			t.Fatalf("Get = %v, %v", v, err)
		}
		<-busy.Done()
		time.Sleep(time.Hour) // the stale expiry timer fires and finds nothing
		synctest.Wait()
	})
}

func TestCtxEndingWhileRunningCancelsTaskContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
		ctx, cancel := context.WithCancelCause(context.WithValue(context.Background(), poolCtxKey{}, "v"))
		started := make(chan struct{})
		f := pool.Submit(ctx, p, func(ctx context.Context) (string, error) {
			close(started)
			<-ctx.Done()
			return ctx.Value(poolCtxKey{}).(string), context.Cause(ctx)
		})
		<-started
		cause := errors.New("caller gave up")
		cancel(cause)
		v, err := f.Get(context.Background())
		if v != "v" || err != cause || !f.Ran() {
			t.Fatalf("Get = %q, %v (ran %v), want the task to see the submitter's value and cancellation cause", v, err, f.Ran())
		}
	})
}

type poolCtxKey struct{}

func TestSubmitWithDoneCtxDoesNotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
		events := testkit.RecordEvents(t, p)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		f := pool.Submit(ctx, p, func(context.Context) (int, error) { panic("must not run") })
		if err := f.Err(); !errors.Is(err, bulkhead.ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Err() = %v, want a withdrawal", err)
		}
		synctest.Wait()
		if m := p.Metrics(); m.PoolSize != 0 || len(events.Strings()) != 0 {
			t.Fatalf("a task with a done context started a worker (%+v) or published %v", m, events.Strings())
		}
	})
}

func TestFutureCancelWithdrawsQueuedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 2, MaxQueueWait: bulkhead.NoTimeout})
		events := testkit.RecordEvents(t, p)
		g := newPoolGate(t)
		busy := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 0))
		synctest.Wait()
		queued := pool.Submit(context.Background(), p, func(context.Context) (int, error) { panic("must not run") })
		var got []error
		queued.OnDone(func(_ int, err error) { got = append(got, err) })
		if !queued.Cancel() {
			t.Fatal("Cancel of a queued task returned false")
		}
		if len(got) != 1 || got[0] != bulkhead.ErrCancelled || queued.Err() != bulkhead.ErrCancelled {
			t.Fatalf("callbacks saw %v, Err() = %v; want ErrCancelled once, delivered during Cancel", got, queued.Err())
		}
		if queued.Cancel() {
			t.Fatal("a second Cancel returned true")
		}
		if d := p.Metrics().QueueDepth; d != 0 {
			t.Fatalf("QueueDepth = %d, want 0", d)
		}
		g.open()
		<-busy.Done()
		synctest.Wait()
		if want := []string{"permitted", "cancelled", "finished"}; !slices.Equal(events.Strings(), want) {
			t.Fatalf("events %v, want %v", events.Strings(), want)
		}
	})
}

func TestFutureCancelWhileRunningCancelsTaskContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
		started := make(chan struct{})
		f := pool.Submit(context.Background(), p, func(ctx context.Context) (int, error) {
			close(started)
			<-ctx.Done()
			return 7, context.Cause(ctx)
		})
		<-started
		if f.Cancel() {
			t.Fatal("Cancel of a running task returned true")
		}
		v, err := f.Get(context.Background())
		if v != 7 || err != bulkhead.ErrCancelled || !f.Ran() {
			t.Fatalf("Get = %v, %v (ran %v); want the task's own result with cause ErrCancelled", v, err, f.Ran())
		}
	})
}

// poolCtxEndingAfterSubmit is a context that is live when Submit looks at it
// and ended at every later look: it pins down what happens when the
// submitter gives up between the hand-over to a worker and the start of fn.
type poolCtxEndingAfterSubmit struct {
	context.Context
	looks atomic.Int32
}

func (c *poolCtxEndingAfterSubmit) Err() error {
	if c.looks.Add(1) == 1 {
		return nil
	}
	return context.Canceled
}

func TestCtxEndingBeforeTheWorkerStartsWithdrawsTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
		events := testkit.RecordEvents(t, p)
		ctx := &poolCtxEndingAfterSubmit{Context: context.Background()}
		f := pool.Submit(ctx, p, func(context.Context) (int, error) { panic("must not run") })
		<-f.Done()
		if err := f.Err(); !errors.Is(err, bulkhead.ErrCancelled) || !errors.Is(err, context.Canceled) || f.Ran() {
			t.Fatalf("Err() = %v (ran %v), want a withdrawal wrapping context.Canceled", err, f.Ran())
		}
		synctest.Wait()
		if want := []string{"cancelled"}; !slices.Equal(events.Strings(), want) {
			t.Fatalf("events %v, want %v", events.Strings(), want)
		}
	})
}

func TestQueuedTasksCostNoGoroutineAndShareOneTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := testkit.NewVirtualClock(time.Unix(0, 0))
		p := newTestPool(t, "p", pool.Config{MaxWorkers: 1, QueueCapacity: 100, MaxQueueWait: time.Minute}, pool.WithClock(clock))
		g := newPoolGate(t)
		busy := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 0))
		synctest.Wait()
		goroutines := poolGoroutines()
		if goroutines != 1 {
			t.Fatalf("%d pool goroutines with one busy worker, want 1", goroutines)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var fs []*pool.Future[int]
		for i := range 100 {
			clock.Advance(time.Millisecond) // every task has its own deadline
			fs = append(fs, pool.Submit(ctx, p, poolTaskWaitingOn(g, i)))
		}
		synctest.Wait()
		if n := poolGoroutines() - goroutines; n != 0 {
			t.Fatalf("100 queued tasks added %d goroutines, want 0", n)
		}
		if n := clock.PendingTimers(); n != 1 {
			t.Fatalf("100 queued tasks armed %d timers, want 1", n)
		}
		clock.Advance(time.Minute - 50*time.Millisecond) // the first 50 expire
		expired := 0
		for _, f := range fs {
			if errors.Is(f.Err(), bulkhead.ErrBulkheadFull) {
				expired++
			}
		}
		if expired != 50 || clock.PendingTimers() != 1 {
			t.Fatalf("%d expired (want 50), %d timers pending (want 1)", expired, clock.PendingTimers())
		}
		g.open()
		<-busy.Done()
		for _, f := range fs {
			<-f.Done()
		}
	})
}

// poolGoroutines counts the goroutines running code of a Pool (its workers)
// in the synctest bubble of its caller, so that goroutines of other tests
// (a worker of an earlier test's pool still ending, outside any bubble or
// in another) do not disturb the count as runtime.NumGoroutine would.
func poolGoroutines() int {
	own := make([]byte, 256)
	own = own[:runtime.Stack(own, false)]
	header, _, _ := strings.Cut(string(own), "\n")
	_, bubble, inBubble := strings.Cut(header, "synctest bubble ")
	if !inBubble {
		panic("poolGoroutines called outside a synctest bubble: " + header)
	}
	bubble = "synctest bubble " + strings.TrimSuffix(bubble, "]:")
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if strings.Contains(header, bubble+"]") && strings.Contains(g, "bulkhead/pool.(*Pool)") {
			count++
		}
	}
	return count
}
