package testkit_test

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// asyncCounter emits 0, 1, 2, ... up to n-1 on a goroutine of its own, one
// element per unit of demand, then completes.
type asyncCounter struct{ n int }

func (p asyncCounter) Subscribe(s flowable.Subscriber[int]) {
	sub := &asyncCounterSub{reqs: make(chan int64, 1024), cancel: make(chan struct{})}
	s.OnSubscribe(sub)
	go func() {
		var demand int64
		for i := 0; i < p.n; {
			if demand == 0 {
				select {
				case n := <-sub.reqs:
					demand += n
				case <-sub.cancel:
					return
				}
				continue
			}
			s.OnNext(i)
			i++
			demand--
		}
		s.OnComplete()
	}()
}

type asyncCounterSub struct {
	reqs       chan int64
	cancel     chan struct{}
	cancelOnce sync.Once
}

func (s *asyncCounterSub) Request(n int64) { s.reqs <- n }
func (s *asyncCounterSub) Cancel()         { s.cancelOnce.Do(func() { close(s.cancel) }) }

// TestSubscriberHammeredWhileAnotherGoroutineSignals requests one element at
// a time from the test goroutine, and reads the state from a third, while
// the publisher signals from its own goroutine: values arrive in order, none
// is lost, and no violation is reported for serial signals.
func TestSubscriberHammeredWhileAnotherGoroutineSignals(t *testing.T) {
	const n = 3000
	for range 3 {
		ts := testkit.NewTestSubscriber[int](testkit.InitialRequest(0))
		asyncCounter{n}.Subscribe(ts)
		stop := make(chan struct{})
		var readers sync.WaitGroup
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					_ = ts.Values()
					_ = ts.String()
					_ = ts.IsComplete()
					// Yield: this loop never blocks, and at GOMAXPROCS 1
					// each value's delivery otherwise waited for it to be
					// preempted (a 10 ms time slice; minutes in all).
					runtime.Gosched()
				}
			}
		})
		for i := range n {
			ts.Request(1)
			if !ts.AwaitCount(i+1, time.Minute) {
				t.Fatalf("value %d never came: %v", i, ts)
			}
		}
		if !ts.Await(time.Minute) {
			t.Fatalf("no completion: %v", ts)
		}
		close(stop)
		readers.Wait()
		vs := ts.Values()
		for i, v := range vs {
			if v != i {
				t.Fatalf("value #%d = %d, want %d", i, v, i)
			}
		}
		if len(vs) != n {
			t.Fatalf("%d values, want %d", len(vs), n)
		}
		ts.AssertComplete(t)
		ts.AssertNoViolations(t)
	}
}
