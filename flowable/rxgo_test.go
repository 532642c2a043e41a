package flowable_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestFromObservablePullsOnlyWhatIsRequested(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder[int](t, 0)
		flowable.FromObservable[int](rxgo.Range(0, 100)).Subscribe(r)
		synctest.Wait()
		r.Request(3)
		synctest.Wait() // the pump is blocked waiting for demand
		if items, _, _ := r.snapshot(); !slices.Equal(items, []int{0, 1, 2}) {
			t.Fatalf("after Request(3): %v", items)
		}
		r.Request(flowable.Unbounded)
		r.wait()
		items, err, completed := r.snapshot()
		if !slices.Equal(items, seq(0, 100)) || err != nil || !completed {
			t.Fatalf("got %d items, %v, completed=%v", len(items), err, completed)
		}
	})
}

func TestFromObservableWithoutRequestStartsNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		observed := false
		obs := rxgo.Defer([]rxgo.Producer{func(context.Context, chan<- rxgo.Item) { observed = true }})
		r := newRecorder[int](t, 0)
		flowable.FromObservable[int](obs).Subscribe(r)
		synctest.Wait()
		if observed {
			t.Fatal("the Observable was observed before any Request")
		}
		r.Cancel()
	})
}

// TestFromObservableCancelEndsPipeline cancels an endless rxgo pipeline
// (Range through Map, each stage a goroutine): the bubble only ends when
// every goroutine of the pipeline has returned.
func TestFromObservableCancelEndsPipeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := rxgo.Range(0, 1<<30).Map(func(_ context.Context, v any) (any, error) { return v.(int) * 2, nil })
		r := newRecorder[int](t, 5)
		flowable.FromObservable[int](obs).Subscribe(r)
		synctest.Wait()
		if items, _, _ := r.snapshot(); !slices.Equal(items, []int{0, 2, 4, 6, 8}) {
			t.Fatalf("got %v", items)
		}
		r.Cancel()
		synctest.Wait()
	})
}

func TestFromObservableErrorItemEndsWithOnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		r := newRecorder[int](t, 10)
		flowable.FromObservable[int](rxgo.Just(1, boom, 3)()).Subscribe(r)
		r.wait()
		if items, err, _ := r.snapshot(); !slices.Equal(items, []int{1}) || err != boom {
			t.Fatalf("got %v, %v", items, err)
		}
	})
}

func TestFromObservableWrongItemTypeIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder[int](t, 10)
		flowable.FromObservable[int](rxgo.Just("x")()).Subscribe(r)
		r.wait()
		if _, err, _ := r.snapshot(); err == nil || !strings.Contains(err.Error(), "string is not a int") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestFromObservableNonPositiveRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder[int](t, 0)
		flowable.FromObservable[int](rxgo.Range(0, 10)).Subscribe(r)
		r.Request(0)
		r.wait()
		if _, err, _ := r.snapshot(); !errors.Is(err, flowable.ErrNonPositiveRequest) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestToObservableDeliversElementsAndCompletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []int
		for item := range flowable.ToObservable(flowable.Range(0, 200)).Observe() {
			if item.E != nil {
				t.Fatal(item.E)
			}
			got = append(got, item.V.(int))
		}
		if !slices.Equal(got, seq(0, 200)) {
			t.Fatalf("got %d items", len(got))
		}
	})
}

func TestToObservableErrorBecomesErrorItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		err := flowable.ToObservable(flowable.Error[int](boom)).Error()
		if err != boom {
			t.Fatalf("got %v", err)
		}
	})
}

func TestToObservableContextCancelCancelsSubscription(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newProbe(flowable.Range(0, 1<<40))
		ctx, cancel := context.WithCancel(context.Background())
		ch := flowable.ToObservable[int](src).Observe(rxgo.WithContext(ctx))
		for range 10 {
			<-ch
		}
		cancel()
		for range ch {
		}
		synctest.Wait()
		if src.cancelled.Load() != 1 {
			t.Fatal("upstream not cancelled when the Observe context ended")
		}
	})
}

// TestBulkheadRoundTripThroughRxgo runs rxgo -> Flowable -> Bulkhead ->
// rxgo and checks that the permit comes back when the stream ends.
func TestBulkheadRoundTripThroughRxgo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1})
		ev := testkit.RecordEvents(t, b)
		p := flowable.Bulkhead(b, flowable.FromObservable[int](rxgo.Range(1, 4)))
		var sum int
		for item := range flowable.ToObservable(p).Observe() {
			sum += item.V.(int)
		}
		synctest.Wait()
		if sum != 10 || ev.Count(bulkhead.CallFinished) != 1 {
			t.Fatalf("sum %d, finished %d", sum, ev.Count(bulkhead.CallFinished))
		}
	})
}

// TestToObservableSlowConsumerSlowsSource checks that ToObservable requests
// only a bounded batch ahead of what the rxgo consumer has received.
func TestToObservableSlowConsumerSlowsSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var produced atomic.Int64
		src := flowable.Create(func(e flowable.Emitter[int]) {
			go func() {
				for i := range 100000 {
					if !e.Next(i) {
						return
					}
					produced.Add(1)
				}
				e.Complete()
			}()
		})
		ctx, cancel := context.WithCancel(context.Background())
		ch := flowable.ToObservable(src).Observe(rxgo.WithContext(ctx))
		for range 5 {
			<-ch
		}
		synctest.Wait() // producer and forwarder are blocked
		if got := produced.Load(); got > 5+64+1 {
			t.Fatalf("%d produced for 5 received: demand is not bounded", got)
		}
		cancel()
		for range ch {
		}
	})
}
