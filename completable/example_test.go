package completable_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
)

// printer is an Observer that prints the terminal signal.
type printer struct{ done chan struct{} }

func newPrinter() printer { return printer{done: make(chan struct{})} }

func (p printer) OnSubscribe(completable.Disposable) {}
func (p printer) OnComplete()                        { fmt.Println("complete"); close(p.done) }
func (p printer) OnError(err error)                  { fmt.Println("error:", err); close(p.done) }

func ExampleFromFunc() {
	send := completable.FromFunc(func(ctx context.Context) error {
		fmt.Println("sending invoice 42")
		return nil
	})
	p := newPrinter()
	send.Subscribe(p) // f runs on its own goroutine
	<-p.done
	// Output:
	// sending invoice 42
	// complete
}

func ExampleComplete() {
	completable.Complete().Subscribe(newPrinter())
	// Output: complete
}

func ExampleError() {
	completable.Error(errors.New("partner down")).Subscribe(newPrinter())
	// Output: error: partner down
}

func ExampleFromObservable() {
	acks := rxgo.Just("ack-1", "ack-2", errors.New("ack-3 refused"))()
	err := completable.Await(context.Background(), completable.FromObservable(acks))
	fmt.Println(err)
	// Output: ack-3 refused
}

func ExampleToObservable() {
	obs := completable.ToObservable(completable.Error(errors.New("partner down")))
	for item := range obs.Observe() {
		fmt.Println("error item:", item.E)
	}
	fmt.Println("closed")
	// Output:
	// error item: partner down
	// closed
}

func ExampleAwait() {
	started := make(chan struct{})
	slow := completable.FromFunc(func(ctx context.Context) error {
		close(started)
		<-ctx.Done() // a call that only ends when it is disposed
		return ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }() // the caller gives up
	err := completable.Await(ctx, slow) // disposes the call when ctx ends
	fmt.Println(err)
	// Output: context canceled
}

func ExampleBulkhead() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 2})
	send := completable.Bulkhead(walmart, completable.FromFunc(func(ctx context.Context) error {
		fmt.Println("permits in use while sending:", walmart.Metrics().InFlightCalls)
		return nil
	}))
	err := completable.Await(context.Background(), send)
	fmt.Println("sent:", err == nil, "- permits in use after:", walmart.Metrics().InFlightCalls)
	// Output:
	// permits in use while sending: 1
	// sent: true - permits in use after: 0
}

func ExampleBulkhead_rejected() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	walmart.TryAcquirePermission() // another call holds the only permit
	defer walmart.ReleasePermission()

	send := completable.Bulkhead(walmart, completable.FromFunc(func(context.Context) error {
		fmt.Println("never runs")
		return nil
	}))
	err := completable.Await(context.Background(), send)
	fmt.Println(errors.Is(err, bulkhead.ErrBulkheadFull))
	fmt.Println(err)
	// Output:
	// true
	// bulkhead "walmart": full, does not permit further calls (no wait)
}

func ExampleBulkhead_queued() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded})
	walmart.TryAcquirePermission() // another call holds the only permit

	p := newPrinter()
	completable.Bulkhead(walmart, completable.Complete()).Subscribe(p) // returns at once
	fmt.Println("queued:", walmart.Metrics().QueuedCalls)
	walmart.FinishCall() // the other call ends: its permit goes to the queued one
	<-p.done
	// Output:
	// queued: 1
	// complete
}
