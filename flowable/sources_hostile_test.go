package flowable_test

// The tests in this file try the promises of the package doc, of the
// Subscription contract and of the sources' doc comments the way a hostile
// subscriber would: breaking rule 3.9 from inside OnNext or OnSubscribe,
// cancelling from inside OnNext or OnSubscribe (twice, then requesting),
// re-entering Request from OnNext, leaving OnNext with runtime.Goexit on a
// source's own goroutine, or giving Emitter.Error a nil error. Each test
// quotes the promise it tries.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Promise (package doc): "Request(n <= 0) ends the subscription with an
// OnError matching ErrNonPositiveRequest (rule 3.9)". A subscriber that
// breaks the rule from inside OnNext, with elements still requested and the
// source about to run out, must get that OnError after the element it is
// handling, not the rest of the elements and an OnComplete.
func TestSynchronousSourceSignalsABadRequestMadeInOnNextInsteadOfCompleting(t *testing.T) {
	sources := []pathSource{
		{"Range", flowable.Range(0, 3)},
		{"FromSlice", flowable.FromSlice(seq(0, 3))},
		{"Just", flowable.Just(seq(0, 3)...)},
	}
	for _, bad := range []int64{0, -1} {
		for _, src := range sources {
			t.Run(fmt.Sprintf("%s/Request(%d)", src.name, bad), func(t *testing.T) {
				r := newRecorder[int](t, 3)
				r.onNext = func(r *recorder[int], v int) {
					if v == 0 {
						r.Request(bad)
					}
				}
				src.pub.Subscribe(r)
				items, err, completed := r.snapshot()
				if !slices.Equal(items, []int{0}) || completed || !errors.Is(err, flowable.ErrNonPositiveRequest) {
					t.Fatalf("Request(%d) inside the first OnNext: got %v, %v, completed=%v; want [0] then the rule 3.9 error", bad, items, err, completed)
				}
				r.Request(1) // nothing after the terminal signal
				if items, _, _ := r.snapshot(); len(items) != 1 {
					t.Fatalf("elements after the rule 3.9 error: %v", items)
				}
			})
		}
	}
}

// Promise (FromPool): "Cancel withdraws a queued task (fn never runs) or
// cancels the context of a running one; no signal follows." A subscriber
// that cancels inside OnNext of the one element must not get OnComplete
// after it (rules 1.8 and 3.5-3.7), whether the value was delivered on the
// pool's worker or on the goroutine calling Request.
func TestFromPoolCancelInsideOnNextStopsTheOnComplete(t *testing.T) {
	for _, deliverOn := range []string{"worker", "Request"} {
		t.Run(deliverOn, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := sftpPool(t, pool.Config{MaxWorkers: 1})
				initial := int64(1)
				if deliverOn == "Request" {
					initial = 0
				}
				r := newRecorder[int](t, initial)
				r.onNext = func(r *recorder[int], v int) { r.Cancel() }
				flowable.FromPool(p, func(context.Context) (int, error) { return 7, nil }).Subscribe(r)
				synctest.Wait()
				if deliverOn == "Request" {
					r.Request(1)
				}
				items, err, completed := r.snapshot()
				if !slices.Equal(items, []int{7}) || err != nil || completed {
					t.Fatalf("Cancel inside OnNext: got %v, %v, completed=%v; want [7] and no terminal signal", items, err, completed)
				}
			})
		})
	}
}

// Promise (FromObservable): "Cancel cancels the context, which ends the
// rxgo pipeline, and the goroutine returns without reading further." A
// subscriber that cancels inside OnNext, with unbounded demand and items
// already waiting in rxgo's channel, gets no further element: the pump's
// wait for the next item used to pick the cancelled context or a ready item
// at random. Each round runs the race again, so the test failed almost
// surely before.
func TestFromObservableCancelInsideOnNextReadsNoFurtherItem(t *testing.T) {
	for round := range 20 {
		synctest.Test(t, func(t *testing.T) {
			r := newRecorder[int](t, flowable.Unbounded)
			r.onNext = func(r *recorder[int], v int) { r.Cancel() }
			flowable.FromObservable[int](rxgo.Range(0, 100, rxgo.WithBufferedChannel(100))).Subscribe(r)
			synctest.Wait()
			if items, err, completed := r.snapshot(); !slices.Equal(items, []int{0}) || err != nil || completed {
				t.Fatalf("round %d: Cancel inside the first OnNext, then got %d elements, %v, completed=%v", round, len(items), err, completed)
			}
		})
	}
}

// Promise (Subscription.Cancel; rule 3.6): after Cancel, Request does
// nothing. A Request(n <= 0) made after Cancel (here both inside OnNext, on
// the pump's goroutine) must not be signalled with OnError.
func TestFromObservableNonPositiveRequestAfterCancelSignalsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder[int](t, 1)
		r.onNext = func(r *recorder[int], v int) {
			r.Cancel()
			r.Request(0)
		}
		flowable.FromObservable[int](rxgo.Range(0, 100, rxgo.WithBufferedChannel(100))).Subscribe(r)
		synctest.Wait()
		if items, err, completed := r.snapshot(); !slices.Equal(items, []int{0}) || err != nil || completed {
			t.Fatalf("Cancel then Request(0) inside OnNext: got %v, %v, completed=%v; want [0] and nothing more", items, err, completed)
		}
	})
}

// Promise (Emitter.Error): "Error ends the subscription with OnError(err)".
// A nil err is a programmer error, which the module answers with a panic
// naming it (as Error(nil) and bulkhead.Resolver.Reject(nil) do); it used
// to end the subscription with OnComplete instead, a success the producer
// never reported. The subscription is left as it was: the producer that
// recovers can still end it.
func TestCreateEmitterErrorWithANilErrorPanicsNamingIt(t *testing.T) {
	r := newRecorder[int](t, 1)
	var recovered any
	flowable.Create(func(e flowable.Emitter[int]) {
		func() {
			defer func() { recovered = recover() }()
			e.Error(nil)
		}()
		if _, err, completed := r.snapshot(); err != nil || completed {
			t.Errorf("Error(nil) ended the subscription: %v, completed=%v", err, completed)
		}
		e.Complete()
	}).Subscribe(r)
	if msg, _ := recovered.(string); msg != "flowable: Emitter.Error called with a nil error" {
		t.Fatalf("Error(nil) recovered %#v, want a panic naming the nil error", recovered)
	}
	if _, err, completed := r.snapshot(); err != nil || !completed {
		t.Fatalf("Complete after the recovered panic: %v, completed=%v", err, completed)
	}
}

// Promise (Bulkhead): each subscription "gives [its permit] back exactly
// once". FromObservable signals on a goroutine of its own, and FromPool
// delivers its value on the pool's worker when the demand came first: a
// subscriber that leaves OnNext with runtime.Goexit (t.FailNow) ends that
// goroutine (or the worker's call), not one of the subscriber's, so no
// Request unwinds through the operator to cancel the subscription, and the
// OnComplete that would give the permit back never comes. The source then
// ends the subscription with an OnError naming the Goexit, so the permit
// goes back (with FinishCall: an element was delivered); it used to stay
// held for ever.
func TestSubscriberGoexitInOnNextGivesThePermitBack(t *testing.T) {
	for _, c := range []struct {
		name string
		src  func(t *testing.T) flowable.Publisher[int]
		want int
		// ownGoroutine: subscribe on a goroutine of its own. FromPool
		// needs it: if fn returns before FromPool registers its
		// callback, the value is delivered on the subscribing
		// goroutine, which the Goexit then ends.
		ownGoroutine bool
	}{
		{"FromObservable", func(*testing.T) flowable.Publisher[int] {
			return flowable.FromObservable[int](rxgo.Range(0, 3))
		}, 0, false},
		{"FromPool", func(t *testing.T) flowable.Publisher[int] {
			p := sftpPool(t, pool.Config{MaxWorkers: 1})
			return flowable.FromPool(p, func(context.Context) (int, error) { return 7, nil })
		}, 7, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBulkhead(t, queueing)
				ev := testkit.RecordEvents(t, b)
				pub := flowable.Bulkhead(b, c.src(t))
				var seen []int
				var errs []error
				sub := flowable.Funcs[int]{
					Next: func(v int) {
						seen = append(seen, v)
						runtime.Goexit()
					},
					Error: func(err error) { errs = append(errs, err) },
				}
				if c.ownGoroutine {
					go pub.Subscribe(sub)
				} else {
					pub.Subscribe(sub)
				}
				synctest.Wait()
				if m := b.Metrics(); m.InFlightCalls != 0 || ev.Count(bulkhead.CallFinished) != 1 {
					t.Fatalf("after Goexit in OnNext: %+v, events %v; want the permit back with FinishCall", m, ev.Strings())
				}
				if !slices.Equal(seen, []int{c.want}) || len(errs) != 1 || !strings.Contains(errs[0].Error(), "runtime.Goexit") {
					t.Fatalf("OnNext saw %v, OnError got %v; want [%d] and one error naming runtime.Goexit", seen, errs, c.want)
				}
			})
		})
	}
}

// Promise (Subscription.Cancel; rule 3.6): no signal after Cancel. A
// subscriber that cancels and then leaves OnNext with runtime.Goexit gets
// no OnError for it: Cancel already gave the permit back.
func TestFromObservableSubscriberGoexitAfterCancelSignalsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBulkhead(t, queueing)
		ev := testkit.RecordEvents(t, b)
		var sub flowable.Subscription
		var errs []error
		flowable.Bulkhead(b, flowable.FromObservable[int](rxgo.Range(0, 3))).Subscribe(flowable.Funcs[int]{
			Start: func(s flowable.Subscription) { sub = s; s.Request(flowable.Unbounded) },
			Next: func(int) {
				sub.Cancel()
				runtime.Goexit()
			},
			Error: func(err error) { errs = append(errs, err) },
		})
		synctest.Wait()
		if len(errs) != 0 || b.Metrics().InFlightCalls != 0 || ev.Count(bulkhead.CallFinished) != 1 {
			t.Fatalf("Cancel then Goexit in OnNext: OnError got %v, events %v", errs, ev.Strings())
		}
	})
}

// Promise (package doc): the sources, Empty and Error among them, "follow
// the Reactive Streams rules: ... Request(n <= 0) ends the subscription
// with an OnError matching ErrNonPositiveRequest (rule 3.9)". Empty and
// Error signal at once, after OnSubscribe, so the only Request that comes
// before their terminal signal is one made inside OnSubscribe: it must be
// answered with the rule 3.9 error, as Range(0, 0) does, not with the
// source's own terminal signal. A later Request does nothing (rule 3.6).
func TestEmptyAndErrorSignalABadRequestMadeInOnSubscribe(t *testing.T) {
	boom := errors.New("boom")
	sources := []pathSource{
		{"Empty", flowable.Empty[int]()},
		{"Error", flowable.Error[int](boom)},
		{"Range(0, 0)", flowable.Range(0, 0)},
	}
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			var sub flowable.Subscription
			var errs []error
			completed := false
			src.pub.Subscribe(flowable.Funcs[int]{
				Start:    func(s flowable.Subscription) { sub = s; s.Request(0) },
				Error:    func(err error) { errs = append(errs, err) },
				Complete: func() { completed = true },
			})
			sub.Request(-1)
			if len(errs) != 1 || !errors.Is(errs[0], flowable.ErrNonPositiveRequest) || completed {
				t.Fatalf("Request(0) inside OnSubscribe: OnError got %v, completed=%v; want one rule 3.9 error", errs, completed)
			}
		})
	}
}

// Promise (Subscription.Cancel: "asks the publisher to stop signalling";
// rules 1.8 and 3.7). Range(0, 0) signals nothing to a subscriber that
// cancels inside OnSubscribe; Empty and Error, which signal at once after
// OnSubscribe, must not either.
func TestEmptyAndErrorSignalNothingAfterACancelInOnSubscribe(t *testing.T) {
	sources := []pathSource{
		{"Empty", flowable.Empty[int]()},
		{"Error", flowable.Error[int](errors.New("boom"))},
		{"Range(0, 0)", flowable.Range(0, 0)},
	}
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			signals := 0
			src.pub.Subscribe(flowable.Funcs[int]{
				Start:    func(s flowable.Subscription) { s.Cancel(); s.Request(0) },
				Error:    func(error) { signals++ },
				Complete: func() { signals++ },
			})
			if signals != 0 {
				t.Fatalf("%d terminal signals after Cancel inside OnSubscribe, want none", signals)
			}
		})
	}
}

// Promise (Subscription): "Cancel asks the publisher to stop signalling; it
// is idempotent", and after it Request does nothing (rules 3.5-3.7), not
// even a Request(n <= 0). Every source of the package, bare and through
// Bulkhead, is cancelled twice inside OnSubscribe and then asked for
// elements and for a bad request: no signal may follow, no goroutine may
// stay behind (goleak) and no permit stay held (testkit).
func TestEverySourceSignalsNothingAfterACancelInOnSubscribe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sftpPool(t, pool.Config{MaxWorkers: 1})
		sources := []pathSource{
			{"Just", flowable.Just(1, 2, 3)},
			{"FromSlice", flowable.FromSlice(seq(0, 3))},
			{"Range", flowable.Range(0, 3)},
			{"Empty", flowable.Empty[int]()},
			{"Error", flowable.Error[int](errors.New("boom"))},
			{"Never", flowable.Never[int]()},
			{"Defer", flowable.Defer(func() flowable.Publisher[int] { return flowable.Range(0, 3) })},
			{"Create", flowable.Create(func(e flowable.Emitter[int]) {
				if e.TryNext(1) {
					t.Error("Create: TryNext delivered after Cancel")
				}
				e.Error(errors.New("late"))
				e.Complete()
			})},
			{"FromPool", flowable.FromPool(p, func(context.Context) (int, error) { return 1, nil })},
			{"FromObservable", flowable.FromObservable[int](rxgo.Range(0, 3))},
		}
		for _, src := range sources {
			for _, through := range []string{"bare", "Bulkhead"} {
				pub := src.pub
				if through == "Bulkhead" {
					pub = flowable.Bulkhead(newBulkhead(t, queueing), src.pub)
				}
				signals := 0
				pub.Subscribe(flowable.Funcs[int]{
					Start: func(s flowable.Subscription) {
						s.Cancel()
						s.Cancel()
						s.Request(5)
						s.Request(0)
					},
					Next:     func(int) { signals++ },
					Error:    func(error) { signals++ },
					Complete: func() { signals++ },
				})
				synctest.Wait()
				if signals != 0 {
					t.Errorf("%s/%s: %d signals after Cancel inside OnSubscribe, want none", src.name, through, signals)
				}
			}
		}
	})
}

// Promise (rule 3.3, package doc: "a Request made inside OnNext does not
// recurse"): through Bulkhead too, on the fused and the foreign path, a
// subscriber that requests one more element from each OnNext is served by
// the loop that is already running, never by a nested OnNext, and gets
// every element (deep enough to overflow the stack if each Request
// recursed).
func TestRequestInsideOnNextDoesNotRecurseThroughBulkhead(t *testing.T) {
	const n = 100000
	for _, src := range bothPaths(n) {
		t.Run(src.name, func(t *testing.T) {
			b := newBulkhead(t, queueing)
			r := newRecorder[int](t, 1)
			depth, maxDepth := 0, 0
			r.onNext = func(r *recorder[int], _ int) {
				depth++
				maxDepth = max(maxDepth, depth)
				r.Request(1)
				depth--
			}
			flowable.Bulkhead(b, src.pub).Subscribe(r)
			r.wait()
			if _, err, completed := r.snapshot(); r.count() != n || maxDepth != 1 || err != nil || !completed {
				t.Fatalf("got %d items (%v, completed=%v), max OnNext nesting %d; want %d and 1", r.count(), err, completed, maxDepth, n)
			}
		})
	}
}
