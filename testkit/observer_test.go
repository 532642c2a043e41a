package testkit_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reactivex/rxgo/v2"

	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestObserverRecordsAnObservable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := testkit.Observe(rxgo.Just(1, 2, 3)().Map(func(_ context.Context, v any) (any, error) {
			return v.(int) * 10, nil
		}))
		if !o.Await(time.Minute) {
			t.Fatal("Await = false")
		}
		o.AssertResult(t, 10, 20, 30)
		if o.Err() != nil || !o.IsComplete() || o.IsCancelled() {
			t.Fatalf("err=%v complete=%v cancelled=%v", o.Err(), o.IsComplete(), o.IsCancelled())
		}
	})
}

func TestObserverRecordsASingleAndAnOptionalSingle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		single := testkit.Observe(rxgo.Just(1, 2, 3)().Max(func(a, b any) int { return a.(int) - b.(int) }))
		empty := testkit.Observe(rxgo.Empty().Max(func(a, b any) int { return 0 }))
		one := testkit.Observe(rxgo.JustItem(7))
		for _, o := range []*testkit.TestObserver{single, empty, one} {
			o.Await(time.Minute)
		}
		single.AssertResult(t, 3)
		empty.AssertResult(t)
		one.AssertResult(t, 7)
	})
}

func TestObserverRecordsErrorItems(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Map stops at the first error (rxgo's default StopOnError).
		o := testkit.Observe(rxgo.Just(1, errBoom, 2)().Map(identity))
		o.Await(time.Minute)
		o.AssertValues(t, 1)
		o.AssertError(t, errBoom)
		if o.IsComplete() {
			t.Fatal("IsComplete after an error item")
		}
	})
}

func TestObserverCancelEndsTheObservationMidStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A source that emits every second until its context ends.
		src := rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
			for i := 0; ; i++ {
				if !rxgo.Of(i).SendContext(ctx, next) {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
			}
		}})
		o := testkit.Observe(src)
		if !o.AwaitCount(2, time.Minute) {
			t.Fatalf("AwaitCount(2) = false; %v", o)
		}
		o.Cancel()
		if !o.Await(time.Minute) {
			t.Fatal("Await after Cancel = false")
		}
		wantFailure(t, runFake(func(tb *fakeTB) { o.AssertNotTerminated(tb) }), "terminated, want no error and an open channel", "cancelled]")
		if !o.IsCancelled() || o.IsComplete() {
			t.Fatalf("cancelled=%v complete=%v, want true, false", o.IsCancelled(), o.IsComplete())
		}
		if n := len(o.Values()); n < 2 {
			t.Fatalf("%d values kept after Cancel, want at least 2", n)
		}
		// synctest.Test fails if the source's goroutine outlived the cancel.
	})
}

func TestObserverEndsWithItsParentContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		o := testkit.ObserveContext(ctx, rxgo.Never())
		o.AssertNotTerminated(t)
		cancel()
		if !o.Await(time.Minute) || !o.IsCancelled() {
			t.Fatalf("after the parent ended: %v", o)
		}
	})
}

func TestObserveContextPanicsOnANilContext(t *testing.T) {
	var noContext context.Context
	msg := panicOf(func() { testkit.ObserveContext(noContext, rxgo.Never()) })
	if msg != "testkit: ObserveContext called with a nil context" {
		t.Fatalf("ObserveContext(nil, src): panic %q, want one naming the nil context", msg)
	}
}

func TestObserverAwaitTimesOutOnASilentSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := testkit.Observe(rxgo.Never())
		defer o.Cancel()
		begin := time.Now()
		if o.Await(time.Second) || o.AwaitCount(1, time.Second) {
			t.Fatal("Await or AwaitCount reported success on a silent source")
		}
		if d := time.Since(begin); d != 2*time.Second {
			t.Fatalf("waited %v of bubble time, want 2s", d)
		}
	})
}

func TestObserverAssertionsFailWithWhatWasReceived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		completed := testkit.Observe(rxgo.Just(1, 2)())
		failed := testkit.Observe(rxgo.Just(1, errBoom)().Map(identity))
		running := testkit.Observe(rxgo.Never())
		defer running.Cancel()
		completed.Await(time.Minute)
		failed.Await(time.Minute)
		tests := []struct {
			name   string
			assert func(tb testing.TB) bool
			want   []string
		}{
			{"values", func(tb testing.TB) bool { return completed.AssertValues(tb, 1, int64(2)) },
				[]string{"values = [1 2], want [1 2]", "OnNext(1), OnNext(2), OnComplete"}},
			{"no values", func(tb testing.TB) bool { return completed.AssertNoValues(tb) }, []string{"got 2 value(s), want none"}},
			{"complete", func(tb testing.TB) bool { return failed.AssertComplete(tb) }, []string{`terminated with error "boom"`}},
			{"complete while running", func(tb testing.TB) bool { return running.AssertComplete(tb) }, []string{"not completed", "not terminated"}},
			{"error", func(tb testing.TB) bool { return completed.AssertError(tb, errBoom) }, []string{`completed, want an error matching "boom"`}},
			{"other error", func(tb testing.TB) bool { return failed.AssertError(tb, errOther) }, []string{`error "boom"`, "does not match"}},
			{"not terminated", func(tb testing.TB) bool { return failed.AssertNotTerminated(tb) }, []string{"terminated", "OnError(boom)"}},
			{"result", func(tb testing.TB) bool { return failed.AssertResult(tb, 1) }, []string{"want completion"}},
		}
		for _, tt := range tests {
			var ok bool
			f := runFake(func(tb *fakeTB) { ok = tt.assert(tb) })
			if ok {
				t.Errorf("%s: the assertion returned true", tt.name)
			}
			wantFailure(t, f, append([]string{"testkit: TestObserver: "}, tt.want...)...)
		}
	})
}

func identity(_ context.Context, v any) (any, error) { return v, nil }
