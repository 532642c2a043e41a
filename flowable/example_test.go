package flowable_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
)

// printer prints every signal.
func printer[T any]() flowable.Funcs[T] {
	return flowable.Funcs[T]{
		Next:     func(v T) { fmt.Println("next", v) },
		Error:    func(err error) { fmt.Println("error:", err) },
		Complete: func() { fmt.Println("complete") },
	}
}

func ExampleBulkhead() {
	b, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded})

	b.TryAcquirePermission() // another call holds the only permit

	orders := flowable.Bulkhead(b, flowable.Just("order-1", "order-2"))
	orders.Subscribe(printer[string]()) // does not block: the subscription waits in the queue
	fmt.Println("queued:", b.Metrics().QueuedCalls)

	b.FinishCall() // the other call ends; its permit goes to the queued subscription
	fmt.Println("in flight:", b.Metrics().InFlightCalls)
	// Output:
	// queued: 1
	// next order-1
	// next order-2
	// complete
	// in flight: 0
}

func ExampleBulkhead_rejected() {
	b, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1}) // no waiting
	b.TryAcquirePermission()
	defer b.ReleasePermission()

	flowable.Bulkhead(b, flowable.Just(1)).Subscribe(flowable.Funcs[int]{
		Error: func(err error) {
			fmt.Println(err)
			fmt.Println("full:", errors.Is(err, bulkhead.ErrBulkheadFull))
		},
	})
	// Output:
	// bulkhead "walmart": full, does not permit further calls (no wait)
	// full: true
}

func ExampleRange() {
	var sub flowable.Subscription
	flowable.Range(1, 5).Subscribe(flowable.Funcs[int]{
		Start: func(s flowable.Subscription) { sub = s },
		Next:  func(v int) { fmt.Println(v) },
	})
	sub.Request(2) // emitted on this goroutine, as requested
	sub.Cancel()
	// Output:
	// 1
	// 2
}

func ExampleFuncs() {
	flowable.FromSlice([]string{"a", "b"}).Subscribe(flowable.Funcs[string]{
		Next:     func(v string) { fmt.Println(v) },
		Complete: func() { fmt.Println("done") },
	})
	// Output:
	// a
	// b
	// done
}

func ExampleCreate() {
	done := make(chan struct{})
	p := flowable.Create(func(e flowable.Emitter[int]) {
		go func() { // Next blocks until requested: run the producer on its own goroutine
			for i := range 3 {
				if !e.Next(i * 10) {
					return // cancelled
				}
			}
			e.Complete()
		}()
	})
	p.Subscribe(flowable.Funcs[int]{
		Next:     func(v int) { fmt.Println(v) },
		Complete: func() { close(done) },
	})
	<-done
	// Output:
	// 0
	// 10
	// 20
}

func ExampleDefer() {
	n := 0
	p := flowable.Defer(func() flowable.Publisher[int] { n++; return flowable.Just(n) })
	p.Subscribe(printer[int]())
	p.Subscribe(printer[int]())
	// Output:
	// next 1
	// complete
	// next 2
	// complete
}

func ExampleEmpty() {
	flowable.Empty[int]().Subscribe(printer[int]())
	// Output: complete
}

func ExampleError() {
	flowable.Error[int](errors.New("partner down")).Subscribe(printer[int]())
	// Output: error: partner down
}

func ExampleNever() {
	// Never signals nothing, except the error of a Request(n <= 0).
	flowable.Never[int]().Subscribe(flowable.Funcs[int]{
		Start: func(s flowable.Subscription) { s.Request(0) }, // rule 3.9
		Error: func(err error) { fmt.Println(errors.Is(err, flowable.ErrNonPositiveRequest)) },
	})
	// Output: true
}

func ExampleFromObservable() {
	done := make(chan struct{})
	flowable.FromObservable[int](rxgo.Just(1, 2, 3)()).Subscribe(flowable.Funcs[int]{
		Next:     func(v int) { fmt.Println(v) },
		Complete: func() { close(done) },
	})
	<-done
	// Output:
	// 1
	// 2
	// 3
}

func ExampleToObservable() {
	for item := range flowable.ToObservable(flowable.Range(1, 3)).Observe() {
		fmt.Println(item.V)
	}
	// Output:
	// 1
	// 2
	// 3
}
