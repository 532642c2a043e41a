package single_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/single"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// soapPool returns a pool that is drained and leak-checked at cleanup.
func soapPool(t *testing.T, cfg pool.Config) *pool.Pool {
	t.Helper()
	p, err := pool.New("soap", cfg)
	if err != nil {
		t.Fatal(err)
	}
	testkit.ClosePool(t, p)
	return p
}

func TestFromPoolEmitsTheValueComputedOnAWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := soapPool(t, pool.Config{MaxWorkers: 1})
		var calls atomic.Int32
		s := single.FromPool(p, func(context.Context) (string, error) { calls.Add(1); return "quote", nil })
		for range 2 { // observed afresh each time
			it, err := s.Get()
			if err != nil || it.E != nil || it.V != "quote" {
				t.Fatalf("Get = %+v, %v", it, err)
			}
			// The worker is free a moment after the value is out (see
			// pool.Future.Get): without this wait the second observation
			// could find it busy and, with no queue, be rejected.
			synctest.Wait()
		}
		if n := calls.Load(); n != 2 {
			t.Fatalf("fn ran %d times for 2 observations", n)
		}
	})
}

func TestFromPoolEmitsTheErrorOfFnOrOfTheRejection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := soapPool(t, pool.Config{MaxWorkers: 1})
		boom := errors.New("boom")
		if it, _ := single.FromPool(p, func(context.Context) (int, error) { return 0, boom }).Get(); it.E != boom {
			t.Fatalf("item %+v, want the error of fn", it)
		}
		// The worker is free a moment after the error is out (see
		// pool.Future.Get): without this wait busy could find it still
		// busy and be rejected, and the call below then run.
		synctest.Wait()
		release := make(chan struct{})
		busy := pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-release; return 0, nil })
		it, _ := single.FromPool(p, func(context.Context) (int, error) { return 1, nil }).Get()
		if !errors.Is(it.E, bulkhead.ErrBulkheadFull) {
			t.Fatalf("item %+v from a full pool, want a *FullError", it)
		}
		close(release)
		<-busy.Done()
	})
}

func TestFromPoolObservationEndingWithdrawsTheQueuedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := soapPool(t, pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout})
		release := make(chan struct{})
		busy := pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-release; return 0, nil })
		var ran atomic.Bool
		ctx, cancel := context.WithCancel(context.Background())
		ch := single.FromPool(p, func(context.Context) (int, error) { ran.Store(true); return 1, nil }).Observe(rxgo.WithContext(ctx))
		synctest.Wait()
		if d := p.Metrics().QueueDepth; d != 1 {
			t.Fatalf("QueueDepth = %d, want the task queued", d)
		}
		cancel()
		for range ch {
		}
		synctest.Wait()
		if d := p.Metrics().QueueDepth; d != 0 {
			t.Fatalf("QueueDepth = %d after the observation ended, want 0", d)
		}
		close(release)
		<-busy.Done()
		synctest.Wait()
		if ran.Load() {
			t.Fatal("the withdrawn task ran")
		}
	})
}

func TestFromPoolPanicsOnNilArguments(t *testing.T) {
	p := soapPool(t, pool.Config{MaxWorkers: 1})
	for name, f := range map[string]func(){
		"pool": func() { single.FromPool(nil, func(context.Context) (int, error) { return 0, nil }) },
		"fn":   func() { single.FromPool[int](p, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("nil %s did not panic", name)
				}
			}()
			f()
		}()
	}
}
