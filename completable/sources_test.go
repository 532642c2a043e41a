package completable_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
)

var errBoom = errors.New("boom")

func TestCompleteSignalsOnCompleteInsideSubscribe(t *testing.T) {
	r := newRecorder(t)
	completable.Complete().Subscribe(r)
	if !r.terminated() {
		t.Fatal("no terminal signal when Subscribe returned")
	}
	if completed, err := r.result(); !completed || err != nil {
		t.Fatalf("completed=%v err=%v, want completion", completed, err)
	}
	if r.disposable().IsDisposed() {
		t.Fatal("IsDisposed() = true after completion")
	}
}

func TestErrorSignalsItsErrorInsideSubscribe(t *testing.T) {
	r := newRecorder(t)
	completable.Error(errBoom).Subscribe(r)
	if completed, err := r.result(); completed || err != errBoom {
		t.Fatalf("completed=%v err=%v, want errBoom", completed, err)
	}
}

func TestDisposeInsideOnSubscribeSuppressesTerminalSignal(t *testing.T) {
	for name, c := range map[string]completable.Completable{
		"Complete": completable.Complete(),
		"Error":    completable.Error(errBoom),
	} {
		t.Run(name, func(t *testing.T) {
			r := newRecorder(t)
			r.onSubscribe = func(d completable.Disposable) { d.Dispose() }
			c.Subscribe(r)
			if r.terminated() {
				t.Fatal("terminal signal after Dispose inside OnSubscribe")
			}
			if !r.disposable().IsDisposed() {
				t.Fatal("IsDisposed() = false after Dispose")
			}
		})
	}
}

func TestDisposeAfterTerminationDoesNothing(t *testing.T) {
	r := newRecorder(t)
	completable.Complete().Subscribe(r)
	r.Dispose()
	if r.disposable().IsDisposed() {
		t.Fatal("IsDisposed() = true: Dispose after completion must not count")
	}
	if completed, _ := r.result(); !completed {
		t.Fatal("not completed")
	}
}

func TestFromFuncSignalsItsResult(t *testing.T) {
	for _, want := range []error{nil, errBoom} {
		r := newRecorder(t)
		completable.FromFunc(func(context.Context) error { return want }).Subscribe(r)
		r.wait()
		completed, err := r.result()
		if err != want || completed != (want == nil) {
			t.Fatalf("f returned %v: got completed=%v err=%v", want, completed, err)
		}
	}
}

func TestFromFuncSubscribeDoesNotWaitForTheCall(t *testing.T) {
	c, result, started := held()
	r := newRecorder(t)
	c.Subscribe(r) // returns although the call is blocked
	<-started
	if r.terminated() {
		t.Fatal("terminated before the call returned")
	}
	result <- nil
	r.wait()
	if completed, _ := r.result(); !completed {
		t.Fatal("not completed")
	}
}

func TestFromFuncRunsAgainForEachSubscription(t *testing.T) {
	var runs atomic.Int32
	c := completable.FromFunc(func(context.Context) error { runs.Add(1); return nil })
	for range 3 {
		if err := completable.Await(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if got := runs.Load(); got != 3 {
		t.Fatalf("f ran %d times for 3 subscriptions", got)
	}
}

func TestFromFuncDisposeEndsContextAndSuppressesResult(t *testing.T) {
	ctxErr := make(chan error, 1)
	c := completable.FromFunc(func(ctx context.Context) error {
		<-ctx.Done()
		ctxErr <- ctx.Err()
		return ctx.Err()
	})
	r := newRecorder(t)
	c.Subscribe(r)
	r.Dispose()
	if err := <-ctxErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("f's context ended with %v, want context.Canceled", err)
	}
	if r.terminated() {
		t.Fatal("the result of a disposed call was signalled")
	}
	if !r.disposable().IsDisposed() {
		t.Fatal("IsDisposed() = false after Dispose")
	}
}

func TestFromFuncDisposedInsideOnSubscribeNeverRuns(t *testing.T) {
	var runs atomic.Int32
	c := completable.FromFunc(func(context.Context) error { runs.Add(1); return nil })
	r := newRecorder(t)
	r.onSubscribe = func(d completable.Disposable) { d.Dispose() }
	c.Subscribe(r)
	if runs.Load() != 0 || r.terminated() {
		t.Fatal("f ran although the subscription was disposed inside OnSubscribe")
	}
}

// TestFromFuncResultRacingDisposeSignalsAtMostOnce races the end of the call
// against Dispose: whichever wins, the observer sees at most one signal, and
// none if Dispose won.
func TestFromFuncResultRacingDisposeSignalsAtMostOnce(t *testing.T) {
	for range 2000 {
		release := make(chan struct{})
		c := completable.FromFunc(func(ctx context.Context) error { <-release; return nil })
		r := newRecorder(t)
		c.Subscribe(r)
		disposed := make(chan struct{})
		go func() { r.Dispose(); close(disposed) }()
		close(release)
		<-disposed
		if r.disposable().IsDisposed() {
			// Dispose won: the call's result must never be signalled.
			if r.terminated() {
				t.Fatal("signalled although Dispose won")
			}
			continue
		}
		r.wait()
		if completed, _ := r.result(); !completed {
			t.Fatal("the call won the race but the observer did not complete")
		}
	}
}

func TestFromObservableIgnoresItemsAndCompletes(t *testing.T) {
	r := newRecorder(t)
	completable.FromObservable(rxgo.Just(1, 2, 3)()).Subscribe(r)
	r.wait()
	if completed, err := r.result(); !completed || err != nil {
		t.Fatalf("completed=%v err=%v", completed, err)
	}
}

func TestFromObservableSignalsFirstErrorItem(t *testing.T) {
	r := newRecorder(t)
	completable.FromObservable(rxgo.Just(1, errBoom, errors.New("second"))()).Subscribe(r)
	r.wait()
	if completed, err := r.result(); completed || err != errBoom {
		t.Fatalf("completed=%v err=%v, want the first error item", completed, err)
	}
}

func TestFromObservableDisposeCancelsTheObservation(t *testing.T) {
	observing := make(chan struct{})
	cancelled := make(chan struct{})
	src := rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
		close(observing)
		<-ctx.Done()
		close(cancelled)
	}})
	r := newRecorder(t)
	completable.FromObservable(src).Subscribe(r)
	<-observing
	r.Dispose()
	select {
	case <-cancelled:
	case <-time.After(defaultTestTimeout):
		t.Fatal("the observation's context did not end on Dispose")
	}
	if r.terminated() {
		t.Fatal("signal after Dispose")
	}
}

func TestToObservableClosesWithoutItemOnCompletion(t *testing.T) {
	var items []rxgo.Item
	for it := range completable.ToObservable(completable.Complete()).Observe() {
		items = append(items, it)
	}
	if len(items) != 0 {
		t.Fatalf("got items %v, want none", items)
	}
}

func TestToObservableEmitsOneErrorItemOnError(t *testing.T) {
	var items []rxgo.Item
	for it := range completable.ToObservable(completable.Error(errBoom)).Observe() {
		items = append(items, it)
	}
	if len(items) != 1 || items[0].E != errBoom {
		t.Fatalf("got items %v, want one error item with errBoom", items)
	}
}

func TestToObservableSubscribesOncePerObserve(t *testing.T) {
	p := newProbe(completable.Complete())
	o := completable.ToObservable(p)
	for range 2 {
		for range o.Observe() {
		}
	}
	if got := p.subscribed.Load(); got != 2 {
		t.Fatalf("subscribed %d times for 2 observations", got)
	}
}

func TestToObservableContextEndDisposesTheCall(t *testing.T) {
	c, _, started := held()
	p := newProbe(c)
	ctx, cancel := context.WithCancel(context.Background())
	ch := completable.ToObservable(p).Observe(rxgo.WithContext(ctx))
	<-started
	cancel()
	for it := range ch {
		t.Fatalf("item %v after the context ended", it)
	}
	if got := p.disposed.Load(); got != 1 {
		t.Fatalf("disposed %d times, want 1", got)
	}
}

func TestAwaitReturnsTheOutcome(t *testing.T) {
	if err := completable.Await(context.Background(), completable.Complete()); err != nil {
		t.Fatalf("Await(Complete()) = %v", err)
	}
	if err := completable.Await(context.Background(), completable.Error(errBoom)); err != errBoom {
		t.Fatalf("Await(Error(errBoom)) = %v", err)
	}
}

func TestAwaitWithEndedContextDoesNotSubscribe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := newProbe(completable.Complete())
	if err := completable.Await(ctx, p); !errors.Is(err, context.Canceled) {
		t.Fatalf("Await = %v, want context.Canceled", err)
	}
	if p.subscribed.Load() != 0 {
		t.Fatal("subscribed with an ended context")
	}
}

func TestAwaitContextEndDisposesTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _, _ := held()
		p := newProbe(c)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		if err := completable.Await(ctx, p); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Await = %v, want context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d != time.Minute {
			t.Fatalf("Await returned after %v, want 1m", d)
		}
		if got := p.disposed.Load(); got != 1 {
			t.Fatalf("disposed %d times, want 1", got)
		}
		synctest.Wait() // f saw its context end and returned
	})
}

// noContext is a nil context.Context, for the test of a nil ctx argument.
var noContext context.Context

func TestNilArgumentsPanicNamingTheRule(t *testing.T) {
	b, _ := bulkhead.New("partner", bulkhead.DefaultConfig())
	for name, tc := range map[string]struct {
		f    func()
		want string
	}{
		"FromFunc(nil)":            {func() { completable.FromFunc(nil) }, "nil func"},
		"Error(nil)":               {func() { completable.Error(nil) }, "nil error"},
		"FromObservable(nil)":      {func() { completable.FromObservable(nil) }, "nil rxgo.Observable"},
		"ToObservable(nil)":        {func() { completable.ToObservable(nil) }, "nil Completable"},
		"Await(nil)":               {func() { _ = completable.Await(context.Background(), nil) }, "nil Completable"},
		"Await(nil ctx)":           {func() { _ = completable.Await(noContext, completable.Complete()) }, "Await called with a nil context"},
		"Bulkhead(nil, c)":         {func() { completable.Bulkhead(nil, completable.Complete()) }, "nil bulkhead.Bulkhead"},
		"Bulkhead(nil *Semaphore)": {func() { completable.Bulkhead((*bulkhead.Semaphore)(nil), completable.Complete()) }, "nil bulkhead.Bulkhead"},
		"Bulkhead(b, nil)":         {func() { completable.Bulkhead(b, nil) }, "nil Completable"},
		"Complete.Subscribe":       {func() { completable.Complete().Subscribe(nil) }, "rule 1.9"},
		"Error.Subscribe":          {func() { completable.Error(errBoom).Subscribe(nil) }, "rule 1.9"},
		"FromFunc.Subscribe":       {func() { completable.FromFunc(func(context.Context) error { return nil }).Subscribe(nil) }, "rule 1.9"},
		"FromObservable.Subscribe": {func() { completable.FromObservable(rxgo.Empty()).Subscribe(nil) }, "rule 1.9"},
		"Bulkhead.Subscribe":       {func() { completable.Bulkhead(b, completable.Complete()).Subscribe(nil) }, "rule 1.9"},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, tc.want) {
					t.Fatalf("panic %q, want one mentioning %q", msg, tc.want)
				}
			}()
			tc.f()
		})
	}
	if m := b.Metrics(); m.InFlightCalls != 0 {
		t.Fatal("a panicking Subscribe took a permit")
	}
}
