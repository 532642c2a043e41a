package completable_test

// The tests in this file try the promises of the Bulkhead operator's doc
// comment the way a hostile caller would: with the only permit held by
// someone else (or by the caller itself), no queue, an observer that
// re-enters the bulkhead from its terminal signal, disposes between the
// grant and the source's OnSubscribe, or leaves its callback abnormally.

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// onePermitNoQueue rejects at once when its only permit is held.
var onePermitNoQueue = bulkhead.Config{MaxConcurrentCalls: 1}

// holdPermit takes a permit of b for the test, failing it if none is free.
func holdPermit(t testing.TB, b *bulkhead.Semaphore) {
	t.Helper()
	if !b.TryAcquirePermission() {
		t.Fatal("permit not free")
	}
}

// Promise: "The permit goes back with b.FinishCall when src completes or
// fails, before the observer is signalled (so an observer that subscribes
// again finds it free)". With one permit and no queue, a retry from the
// terminal signal is rejected at once unless the permit is really back.
// FromFunc signals on its own goroutine, so it runs in a bubble.
func TestHostileRetryFromTheTerminalSignalFindsTheOnlyPermitFree(t *testing.T) {
	boom := errors.New("boom")
	sources := map[string]completable.Completable{
		"Complete":       completable.Complete(),
		"Error":          completable.Error(boom),
		"FromFunc/nil":   completable.FromFunc(func(context.Context) error { return nil }),
		"FromFunc/error": completable.FromFunc(func(context.Context) error { return boom }),
	}
	for name, src := range sources {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBulkhead(t, onePermitNoQueue)
				ev := testkit.RecordEvents(t, b)
				call := completable.Bulkhead(b, src)
				retry := newRecorder(t)
				first := newRecorder(t)
				first.onTerminal = func() { call.Subscribe(retry) }
				call.Subscribe(first)
				first.wait()
				retry.wait()
				completed, err := retry.result()
				var fe *bulkhead.FullError
				if errors.As(err, &fe) {
					t.Fatalf("the retry from the terminal signal was rejected: %v", err)
				}
				if wantErr := name == "Error" || name == "FromFunc/error"; wantErr != errors.Is(err, boom) || wantErr == completed {
					t.Fatalf("retry: completed=%v, err=%v", completed, err)
				}
				if ev.Count(bulkhead.CallFinished) != 2 || ev.Count(bulkhead.CallRejected) != 0 {
					t.Fatalf("events %v, want two CallFinished and no rejection", ev.Strings())
				}
			})
		})
	}
}

// Promise: Dispose while the permit is pending withdraws the acquisition
// and "the observer is not signalled after Dispose returns". Disposed in
// OnSubscribe, before the permit is asked for, on a full bulkhead without a
// queue that would reject the call at once, the FullError must not reach
// the observer and the bulkhead must not be asked at all.
func TestHostileDisposeInOnSubscribeOfAFullBulkheadSignalsNothing(t *testing.T) {
	b := newBulkhead(t, onePermitNoQueue)
	holdPermit(t, b)
	defer b.ReleasePermission()
	ev := testkit.RecordEvents(t, b)
	src := newProbe(completable.Complete())
	r := newRecorder(t)
	r.onSubscribe = func(d completable.Disposable) { d.Dispose() }
	completable.Bulkhead(b, src).Subscribe(r)
	if r.terminated() || src.subscribed.Load() != 0 || len(ev.Events()) != 0 {
		t.Fatalf("terminated=%v, subscribed %d, events %v: want nothing", r.terminated(), src.subscribed.Load(), ev.Strings())
	}
	if !r.disposable().IsDisposed() {
		t.Fatal("IsDisposed() = false")
	}
}

// Promise: Dispose "after src was subscribed and before it terminated"
// gives the permit back with ReleasePermission and disposes src; "A
// terminal signal and Dispose race through one CAS: the observer gets no
// signal once Dispose has won". Here the observer disposes while src is
// inside Subscribe, after the grant but before src handed its Disposable
// over (the window of a context cancelled between grant and use): src's
// Disposable must be disposed as soon as it arrives, src's later OnComplete
// must not reach the observer, and the permit goes back unused.
func TestHostileDisposeBetweenGrantAndTheSourcesOnSubscribe(t *testing.T) {
	for _, queued := range []bool{false, true} {
		t.Run(map[bool]string{false: "granted at once", true: "granted from the queue"}[queued], func(t *testing.T) {
			b := newBulkhead(t, queueing)
			r := newRecorder(t)
			var upDisposed bool
			src := subscribeFunc(func(o completable.Observer) {
				r.Dispose() // the observer disposes before src's OnSubscribe
				up := &disposeFlag{}
				o.OnSubscribe(up)
				upDisposed = up.IsDisposed()
				o.OnComplete()
			})
			if queued {
				holdPermit(t, b)
			}
			ev := testkit.RecordEvents(t, b)
			completable.Bulkhead(b, src).Subscribe(r)
			if queued {
				b.ReleasePermission()
			}
			if r.terminated() {
				t.Fatal("the observer was signalled after its Dispose won")
			}
			if !upDisposed {
				t.Fatal("src's Disposable, handed over after the Dispose, was not disposed at once")
			}
			if !r.disposable().IsDisposed() {
				t.Fatal("IsDisposed() = false")
			}
			if m := b.Metrics(); m.InFlightCalls != 0 || ev.Count(bulkhead.CallFinished) != 0 {
				t.Fatalf("metrics %+v, events %v: want the permit back with ReleasePermission", m, ev.Strings())
			}
		})
	}
}

type subscribeFunc func(o completable.Observer)

func (f subscribeFunc) Subscribe(o completable.Observer) { f(o) }

type disposeFlag struct{ disposed bool }

func (d *disposeFlag) Dispose()         { d.disposed = true }
func (d *disposeFlag) IsDisposed() bool { return d.disposed }

// Promise: the permit goes back before the observer is signalled. An
// observer that panics or calls runtime.Goexit in its terminal signal,
// granted from the queue (so the signal runs on the goroutine that gave the
// other permit back), must not take the permit with it.
func TestHostileObserverLeavingItsTerminalSignalAbnormallyLeaksNothing(t *testing.T) {
	leave := map[string]func(){
		"panic":  func() { panic("observer broke") },
		"Goexit": runtime.Goexit,
	}
	for how, bye := range leave {
		sources := map[string]completable.Completable{"Complete": completable.Complete(), "Error": completable.Error(errors.New("boom"))}
		for name, src := range sources {
			t.Run(name+"/"+how, func(t *testing.T) {
				b := newBulkhead(t, queueing)
				holdPermit(t, b)
				ev := testkit.RecordEvents(t, b)
				r := newRecorder(t)
				r.onTerminal = bye
				completable.Bulkhead(b, src).Subscribe(r)
				ended := testkit.RunToEnd(func() { b.ReleasePermission() })
				if ended == nil {
					t.Fatal("the observer's terminal signal returned normally")
				}
				if m := b.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 || ev.Count(bulkhead.CallFinished) != 1 {
					t.Fatalf("metrics %+v, events %v", m, ev.Strings())
				}
				next := newRecorder(t)
				completable.Bulkhead(b, completable.Complete()).Subscribe(next)
				if completed, err := next.result(); !completed || err != nil {
					t.Fatalf("next subscription: completed=%v, %v", completed, err)
				}
			})
		}
	}
}

// Promise (ToObservable): "When the observation's context ends first, the
// subscription is disposed and the channel closes"; with Bulkhead, a
// Dispose while pending withdraws the acquisition. An observation still
// queued for the permit when its context ends must leave the queue, close
// its channel with no item, and never run the call.
func TestHostileToObservableContextEndingWhileQueuedWithdraws(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBulkhead(t, queueing)
		holdPermit(t, b)
		ev := testkit.RecordEvents(t, b)
		ran := false
		call := completable.Bulkhead(b, completable.FromFunc(func(context.Context) error { ran = true; return nil }))
		ctx, cancel := context.WithCancel(context.Background())
		ch := completable.ToObservable(call).Observe(rxgo.WithContext(ctx))
		synctest.Wait()
		if q := b.Metrics().QueuedCalls; q != 1 {
			t.Fatalf("%d queued, want the observation queued", q)
		}
		cancel()
		for it := range ch {
			t.Fatalf("item %v after the context ended", it)
		}
		// No synctest.Wait: the producer disposes the subscription before
		// it returns and rxgo closes the channel, so a drained channel
		// means the acquisition was withdrawn.
		if q := b.Metrics().QueuedCalls; q != 0 {
			t.Fatalf("%d queued once the channel closed", q)
		}
		b.ReleasePermission()
		synctest.Wait()
		if ran || ev.Count(bulkhead.CallCancelled) != 1 || ev.Count(bulkhead.CallFinished) != 0 {
			t.Fatalf("ran=%v, events %v: want a withdrawn acquisition", ran, ev.Strings())
		}
	})
}

// Promise (Await): "if ctx has already ended, it returns ctx.Err() without
// subscribing". On a full bulkhead without a queue, a subscription would be
// rejected with a FullError; the caller must get ctx.Err() and the bulkhead
// must not be asked.
func TestHostileAwaitWithAnEndedContextOnAFullBulkheadAsksNothing(t *testing.T) {
	b := newBulkhead(t, onePermitNoQueue)
	holdPermit(t, b)
	defer b.ReleasePermission()
	ev := testkit.RecordEvents(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := completable.Await(ctx, completable.Bulkhead(b, completable.Complete())); err != context.Canceled {
		t.Fatalf("Await = %v, want context.Canceled", err)
	}
	if len(ev.Events()) != 0 {
		t.Fatalf("events %v, want none", ev.Strings())
	}
}

// Promise (FromObservable): it "signals OnError with the first error item
// (and stops observing)". A source that goes on emitting after its error,
// plain (Just) or through rxgo operators that run goroutines of their own
// (Map, also with ContinueOnError), must be stopped: the bubble only ends
// when every goroutine of the pipeline has returned.
func TestHostileFromObservableStopsAPipelineThatGoesOnAfterItsError(t *testing.T) {
	boom := errors.New("boom")
	failAt3 := func(_ context.Context, v any) (any, error) {
		if v.(int) == 3 {
			return nil, boom
		}
		return v, nil
	}
	sources := map[string]func() rxgo.Observable{
		"Just": func() rxgo.Observable { return rxgo.Just(boom, 1, 2, 3)() },
		"Map":  func() rxgo.Observable { return rxgo.Range(0, 1<<20).Map(failAt3) },
		"Map, ContinueOnError": func() rxgo.Observable {
			return rxgo.Range(0, 1<<20).Map(failAt3, rxgo.WithErrorStrategy(rxgo.ContinueOnError))
		},
	}
	for name, src := range sources {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBulkhead(t, onePermitNoQueue)
				call := completable.Bulkhead(b, completable.FromObservable(src()))
				if err := completable.Await(t.Context(), call); !errors.Is(err, boom) {
					t.Fatalf("Await = %v, want boom", err)
				}
				if m := b.Metrics(); m.InFlightCalls != 0 {
					t.Fatalf("%d in flight after the error", m.InFlightCalls)
				}
			})
		})
	}
}
