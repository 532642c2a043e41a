package flowable_test

// The tests in this file try the promises of the Bulkhead operator's doc
// comment the way a hostile caller would: with the only permit held by
// someone else (or by the caller itself), no queue, a subscriber that leaves
// its callback with runtime.Goexit, re-enters the bulkhead, or breaks rule
// 3.9 before the permit was even asked for.

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/pool"
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

// Promise: "OnError ... gives the permit back ... before passing err on, so
// a subscriber that retries finds it free" (and OnComplete likewise, fuse.go).
// With one permit and no queue, a retry made from the terminal signal is
// rejected at once unless the permit is really back by then.
func TestHostileRetryFromTheTerminalSignalFindsTheOnlyPermitFree(t *testing.T) {
	boom := errors.New("boom")
	sources := append(bothPaths(2), pathSource{"foreign/Error", flowable.Error[int](boom)})
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			b := newBulkhead(t, onePermitNoQueue)
			ev := testkit.RecordEvents(t, b)
			pub := flowable.Bulkhead(b, src.pub)
			var retry *recorder[int]
			again := func() {
				if retry == nil {
					retry = newRecorder[int](t, flowable.Unbounded)
					pub.Subscribe(retry)
				}
			}
			pub.Subscribe(flowable.Funcs[int]{
				Error:    func(error) { again() },
				Complete: again,
			})
			if retry == nil {
				t.Fatal("the first subscription did not terminate inside Subscribe")
			}
			items, err, completed := retry.snapshot()
			var fe *bulkhead.FullError
			if errors.As(err, &fe) {
				t.Fatalf("the retry from the terminal signal was rejected: %v", err)
			}
			if src.name == "foreign/Error" {
				if !errors.Is(err, boom) {
					t.Fatalf("retry got %v, want boom", err)
				}
			} else if !slices.Equal(items, []int{0, 1}) || err != nil || !completed {
				t.Fatalf("retry got %v, %v, completed=%v", items, err, completed)
			}
			if ev.Count(bulkhead.CallFinished) != 2 || ev.Count(bulkhead.CallRejected) != 0 {
				t.Fatalf("events %v, want two CallFinished and no rejection", ev.Strings())
			}
		})
	}
}

// Promise: a subscriber that leaves OnNext abnormally while src emits
// synchronously gets its permit back (the doc names panics; runtime.Goexit,
// as t.FailNow calls, unwinds through the same defers). Granted at once the
// Goexit ends the subscribing goroutine; granted from the queue it ends the
// goroutine that gave the other permit back, which delivered the grant.
func TestHostileGoexitInOnNextGivesThePermitBack(t *testing.T) {
	for _, queued := range []bool{false, true} {
		for _, src := range bothPaths(3) {
			name := src.name + map[bool]string{false: "/granted at once", true: "/granted from the queue"}[queued]
			t.Run(name, func(t *testing.T) {
				b := newBulkhead(t, queueing)
				ev := testkit.RecordEvents(t, b)
				pub := flowable.Bulkhead(b, src.pub)
				var seen []int
				goexiter := flowable.Funcs[int]{Next: func(v int) {
					seen = append(seen, v)
					runtime.Goexit()
				}}
				var ended any
				if queued {
					holdPermit(t, b)
					pub.Subscribe(goexiter)
					ended = testkit.RunToEnd(func() { b.ReleasePermission() })
				} else {
					ended = testkit.RunToEnd(func() { pub.Subscribe(goexiter) })
				}
				if ended != testkit.Goexited {
					t.Fatalf("the goroutine ended with %v, want runtime.Goexit", ended)
				}
				if !slices.Equal(seen, []int{0}) {
					t.Fatalf("OnNext saw %v, want [0]", seen)
				}
				if m := b.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
					t.Fatalf("after Goexit in OnNext: %+v", m)
				}
				if ev.Count(bulkhead.CallFinished) != 1 {
					t.Fatalf("events %v, want the permit back with OnComplete (an element was delivered)", ev.Strings())
				}
				next := newRecorder[int](t, flowable.Unbounded)
				pub.Subscribe(next)
				if items, err, done := next.snapshot(); !slices.Equal(items, seq(0, 3)) || err != nil || !done {
					t.Fatalf("next subscription: %v, %v, completed=%v", items, err, done)
				}
			})
		}
	}
}

// Promise: each subscription acquires its own permit, and the permit goes
// back before the subscriber learns of the completion. A subscriber that
// subscribes again through the same operator from OnNext, while it holds
// the only permit, queues behind itself; its own completion hands the permit
// over (on its goroutine, before its OnComplete), so the inner subscription
// runs to its end before the outer one is told it completed. With no queue
// the inner one is rejected at once and the outer one is unaffected.
func TestHostileSubscribingAgainFromOnNextQueuesBehindTheOwnPermit(t *testing.T) {
	for _, queue := range []bool{true, false} {
		for _, src := range bothPaths(2) {
			name := src.name + map[bool]string{false: "/no queue", true: "/queue"}[queue]
			t.Run(name, func(t *testing.T) {
				cfg := onePermitNoQueue
				if queue {
					cfg = queueing
				}
				b := newBulkhead(t, cfg)
				pub := flowable.Bulkhead(b, src.pub)
				var log []string
				inner := newRecorder[int](t, flowable.Unbounded)
				pub.Subscribe(flowable.Funcs[int]{
					Next: func(v int) {
						if v == 0 {
							pub.Subscribe(inner)
							if queue {
								if q := b.Metrics().QueuedCalls; q != 1 {
									t.Errorf("inner subscription: %d queued, want 1", q)
								}
							}
						}
					},
					Complete: func() {
						_, innerErr, innerDone := inner.snapshot()
						log = append(log, "outer complete, inner terminated="+map[bool]string{false: "no", true: "yes"}[innerErr != nil || innerDone])
					},
				})
				items, err, completed := inner.snapshot()
				if queue {
					if !slices.Equal(items, []int{0, 1}) || err != nil || !completed {
						t.Fatalf("inner: %v, %v, completed=%v", items, err, completed)
					}
				} else {
					var fe *bulkhead.FullError
					if len(items) != 0 || !errors.As(err, &fe) {
						t.Fatalf("inner: %v, %v; want FullError at once", items, err)
					}
				}
				if !slices.Equal(log, []string{"outer complete, inner terminated=yes"}) {
					t.Fatalf("log %v", log)
				}
			})
		}
	}
}

// Promise: "Request(n <= 0) while pending withdraws the acquisition and
// signals OnError (matching ErrNonPositiveRequest)". Made inside OnSubscribe,
// before the permit is even asked for, on a full bulkhead with no queue, it
// must be that error and not a FullError, and the bulkhead must not be
// asked at all (no rejection event, one terminal signal).
func TestHostileNonPositiveRequestInOnSubscribeOfAFullBulkheadAsksNothing(t *testing.T) {
	for _, n := range []int64{0, -1, -9223372036854775808} {
		b := newBulkhead(t, onePermitNoQueue)
		holdPermit(t, b)
		ev := testkit.RecordEvents(t, b)
		src := newProbe(flowable.Just(1))
		var errs []error
		flowable.Bulkhead(b, src).Subscribe(flowable.Funcs[int]{
			Start: func(s flowable.Subscription) { s.Request(n) },
			Error: func(err error) { errs = append(errs, err) },
		})
		if len(errs) != 1 || !errors.Is(errs[0], flowable.ErrNonPositiveRequest) {
			t.Fatalf("Request(%d): errors %v, want one matching ErrNonPositiveRequest", n, errs)
		}
		b.ReleasePermission()
		if len(ev.Events()) != 0 || src.subscribed.Load() != 0 {
			t.Fatalf("Request(%d): events %v, source subscribed %d times; want none", n, ev.Strings(), src.subscribed.Load())
		}
	}
}

// Promise: Cancel withdraws the acquisition and no signal follows. Made in
// OnSubscribe on a full bulkhead without a queue, which would reject the
// call at once, it must not produce the FullError either.
func TestHostileCancelInOnSubscribeOfAFullBulkheadSignalsNothing(t *testing.T) {
	b := newBulkhead(t, onePermitNoQueue)
	holdPermit(t, b)
	defer b.ReleasePermission()
	ev := testkit.RecordEvents(t, b)
	r := newRecorder[int](t, 0)
	flowable.Bulkhead(b, flowable.Just(1)).Subscribe(flowable.Funcs[int]{
		Start: func(s flowable.Subscription) { s.Cancel(); s.Request(1) },
		Next:  r.OnNext,
		Error: r.OnError,
	})
	if items, err, done := r.snapshot(); len(items) != 0 || err != nil || done {
		t.Fatalf("signal after a Cancel in OnSubscribe: %v, %v, %v", items, err, done)
	}
	if len(ev.Events()) != 0 {
		t.Fatalf("events %v, want none", ev.Strings())
	}
}

// Promise (ToObservable): "When the Observe context ends, the subscription
// is cancelled and the channel closed"; with Bulkhead: "Cancel withdraws the
// acquisition (no permit consumed, src never subscribed)". An observation
// still queued for the permit when its context ends must leave the queue and
// close its channel; the permit given back afterwards goes to nobody.
func TestHostileToObservableContextEndingWhileQueuedWithdraws(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBulkhead(t, queueing)
		ev := testkit.RecordEvents(t, b)
		holdPermit(t, b)
		src := newProbe(flowable.Range(0, 3))
		ctx, cancel := context.WithCancel(context.Background())
		ch := flowable.ToObservable(flowable.Bulkhead(b, src)).Observe(rxgo.WithContext(ctx))
		synctest.Wait()
		if q := b.Metrics().QueuedCalls; q != 1 {
			t.Fatalf("%d queued, want the observation queued", q)
		}
		cancel()
		var got []rxgo.Item
		for it := range ch {
			got = append(got, it)
		}
		// No synctest.Wait: the producer cancels the subscription before it
		// returns and rxgo closes the channel, so a drained channel means
		// the acquisition was withdrawn.
		if q := b.Metrics().QueuedCalls; q != 0 {
			t.Fatalf("%d queued once the channel closed", q)
		}
		b.ReleasePermission()
		if src.subscribed.Load() != 0 || ev.Count(bulkhead.CallCancelled) != 1 || ev.Count(bulkhead.CallFinished) != 0 {
			t.Fatalf("source subscribed %d times, events %v; want a withdrawn acquisition", src.subscribed.Load(), ev.Strings())
		}
		for _, it := range got {
			if !it.Error() {
				t.Fatalf("item %v after the context ended", it.V)
			}
		}
	})
}

// Promise (FromObservable): "a subscription that never requests (for example
// one still waiting for a bulkhead permit) costs none" — and with Bulkhead
// the demand is buffered while pending, so even a subscriber that requested
// must not get the Observable observed before the grant.
func TestHostileFromObservableIsNotObservedWhileItsBulkheadCallIsQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBulkhead(t, queueing)
		holdPermit(t, b)
		observed := 0
		obs := rxgo.Defer([]rxgo.Producer{func(_ context.Context, next chan<- rxgo.Item) {
			observed++
			next <- rxgo.Of(7)
		}})
		r := newRecorder[int](t, 5)
		flowable.Bulkhead(b, flowable.FromObservable[int](obs)).Subscribe(r)
		synctest.Wait()
		if observed != 0 {
			t.Fatal("the Observable was observed while the call was queued")
		}
		b.ReleasePermission()
		r.wait()
		items, err, done := r.snapshot()
		if observed != 1 || !slices.Equal(items, []int{7}) || err != nil || !done {
			t.Fatalf("observed %d times, got %v, %v, completed=%v", observed, items, err, done)
		}
	})
}

// Promise (Granted, doc of Bulkhead): if subscribing src panics, the
// subscription is cancelled so that the permit goes back, and the panic goes
// on. The user code that panics or calls runtime.Goexit here is the
// source's own: a Create producer (called inside Subscribe, after the
// source's OnSubscribe) or a Defer factory (called before any OnSubscribe of
// the source). Both are tried granted at once and granted from the queue,
// where they run on the goroutine that gave the other permit back.
func TestHostileSourceThatPanicsOrExitsWhileSubscribedGivesThePermitBack(t *testing.T) {
	leave := map[string]func(){
		"panic":  func() { panic("source broke") },
		"Goexit": runtime.Goexit,
	}
	for how, bye := range leave {
		sources := map[string]flowable.Publisher[int]{
			"Create": flowable.Create(func(flowable.Emitter[int]) { bye() }),
			"Defer":  flowable.Defer(func() flowable.Publisher[int] { bye(); return nil }),
		}
		for name, src := range sources {
			for _, queued := range []bool{false, true} {
				t.Run(name+"/"+how+map[bool]string{false: "/granted at once", true: "/granted from the queue"}[queued], func(t *testing.T) {
					b := newBulkhead(t, queueing)
					pub := flowable.Bulkhead(b, src)
					r := newRecorder[int](t, 1)
					var ended any
					if queued {
						holdPermit(t, b)
						pub.Subscribe(r)
						ended = testkit.RunToEnd(func() { b.ReleasePermission() })
					} else {
						ended = testkit.RunToEnd(func() { pub.Subscribe(r) })
					}
					want := any("source broke")
					if how == "Goexit" {
						want = testkit.Goexited
					}
					if ended != want {
						t.Fatalf("the goroutine ended with %v, want %v", ended, want)
					}
					if m := b.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
						t.Fatalf("after the source left Subscribe abnormally: %+v", m)
					}
					if items, err, done := r.snapshot(); len(items) != 0 || err != nil || done {
						t.Fatalf("signals after the subscription was cancelled: %v, %v, %v", items, err, done)
					}
				})
			}
		}
	}
}

// Promise (FromPool): "Cancel withdraws a queued task (fn never runs)".
// Cancelled inside OnSubscribe, before Subscribe submitted anything, the
// task must not run, nothing may stay queued in the pool, and no signal
// (not even the pool's rejection) may follow. The pool has one worker,
// busy, and a queue, so a submitted task would wait there.
func TestHostileFromPoolCancelledInOnSubscribeNeverRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sftpPool(t, pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout})
		release := make(chan struct{})
		busy := pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-release; return 0, nil })
		var ran atomic.Bool
		s := &poolSubscriber{}
		flowable.FromPool(p, func(context.Context) (string, error) { ran.Store(true); return "x", nil }).Subscribe(flowable.Funcs[string]{
			Start: func(sub flowable.Subscription) { sub.Cancel(); sub.Request(1) },
			Next:  s.OnNext,
			Error: s.OnError,
		})
		synctest.Wait()
		if d := p.Metrics().QueueDepth; d != 0 {
			t.Fatalf("QueueDepth = %d for a task cancelled before it was submitted", d)
		}
		close(release)
		<-busy.Done()
		synctest.Wait()
		if got := s.got(); got != "" || ran.Load() {
			t.Fatalf("signals %q, ran %v: want no signal and fn never run", got, ran.Load())
		}
	})
}

// requestLog is a foreign Publisher that records the Requests its
// subscription receives and emits nothing.
type requestLog struct {
	mu   sync.Mutex
	reqs []int64
}

func (p *requestLog) Subscribe(s flowable.Subscriber[int]) { s.OnSubscribe(p) }
func (p *requestLog) Cancel()                              {}
func (p *requestLog) Request(n int64) {
	p.mu.Lock()
	p.reqs = append(p.reqs, n)
	p.mu.Unlock()
}

// Promise: "Requests are summed (saturating at math.MaxInt64) and replayed
// in one Request when src is subscribed". Demand that would overflow while
// pending must reach src as one Request(math.MaxInt64): a sum that wrapped
// negative would make src signal a rule 3.9 error the subscriber never
// caused.
func TestHostileOverflowingDemandWhilePendingIsReplayedSaturated(t *testing.T) {
	b := newBulkhead(t, queueing)
	holdPermit(t, b)
	src := &requestLog{}
	r := newRecorder[int](t, math.MaxInt64)
	flowable.Bulkhead(b, flowable.Publisher[int](src)).Subscribe(r)
	r.Request(math.MaxInt64)
	r.Request(1)
	b.ReleasePermission()
	src.mu.Lock()
	reqs := slices.Clone(src.reqs)
	src.mu.Unlock()
	if !slices.Equal(reqs, []int64{math.MaxInt64}) {
		t.Fatalf("src received Requests %v, want one Request(math.MaxInt64)", reqs)
	}
	r.Cancel()
	if _, err, _ := r.snapshot(); err != nil {
		t.Fatalf("subscriber got %v", err)
	}
}

// Promise: Request(n <= 0) while pending withdraws the acquisition and
// signals the rule 3.9 error; once src is subscribed it is forwarded and src
// signals it. Made while another goroutine delivers the grant, whichever
// wins, the subscriber gets exactly one terminal signal, that error, and
// the permit comes back (with ReleasePermission if the withdrawal won,
// with OnComplete if src was subscribed and failed).
func TestHostileNonPositiveRequestRacingTheGrant(t *testing.T) {
	const runs = 500
	for _, src := range bothPaths(3) {
		t.Run(src.name, func(t *testing.T) {
			withdrawn, forwarded := 0, 0
			for range runs {
				b, err := bulkhead.New("partner", queueing)
				if err != nil {
					t.Fatal(err)
				}
				ev := testkit.RecordEvents(t, b)
				b.TryAcquirePermission()
				r := newRecorder[int](t, 0)
				flowable.Bulkhead(b, src.pub).Subscribe(r)
				var wg sync.WaitGroup
				wg.Go(b.ReleasePermission)
				wg.Go(func() { r.Request(0) })
				wg.Wait()
				items, err, completed := r.snapshot()
				if len(items) != 0 || completed || !errors.Is(err, flowable.ErrNonPositiveRequest) {
					t.Fatalf("got %v, %v, completed=%v; want only the rule 3.9 error", items, err, completed)
				}
				if m := b.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
					t.Fatalf("leak: %+v", m)
				}
				if ev.Count(bulkhead.CallFinished) == 1 {
					forwarded++
				} else {
					withdrawn++
				}
			}
			t.Logf("withdrawn while pending %d times, forwarded to src %d times", withdrawn, forwarded)
		})
	}
}

// Promise (package doc, FromObservable): "Request(n <= 0) ends the
// subscription with an OnError matching ErrNonPositiveRequest (rule 3.9)";
// with Bulkhead it is forwarded to src, which "must signal that error
// itself", and the permit goes back with it. Made while the subscription
// waits for an item it already asked for, from a source that is slow (here:
// silent until its context ends), the error must come without waiting for
// the next item, and the rxgo pipeline must stop.
func TestHostileFromObservableNonPositiveRequestWhileWaitingForAnItem(t *testing.T) {
	for _, bulkheaded := range []bool{false, true} {
		t.Run(map[bool]string{false: "bare", true: "through Bulkhead"}[bulkheaded], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				silent := rxgo.Defer([]rxgo.Producer{func(ctx context.Context, _ chan<- rxgo.Item) { <-ctx.Done() }})
				pub := flowable.FromObservable[int](silent)
				var b *bulkhead.Semaphore
				if bulkheaded {
					b = newBulkhead(t, onePermitNoQueue)
					pub = flowable.Bulkhead(b, pub)
				}
				r := newRecorder[int](t, 1)
				pub.Subscribe(r)
				defer r.Cancel() // ends the pipeline if the error never came (no-op after it)
				synctest.Wait()  // the pump waits for the item it was asked for
				r.Request(0)
				synctest.Wait()
				items, err, _ := r.snapshot()
				if len(items) != 0 || !errors.Is(err, flowable.ErrNonPositiveRequest) {
					t.Fatalf("got %v, %v; want the rule 3.9 error without waiting for an item", items, err)
				}
				if b != nil && b.Metrics().InFlightCalls != 0 {
					t.Fatal("the permit was not given back with the rule 3.9 error")
				}
			})
		})
	}
}
