package pool_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Pools for blocking code take their defaults from resilience4j; size
// MaxWorkers for the dependency, not for the CPUs.
func ExampleDefaultConfig() {
	cfg := pool.DefaultConfig()
	cfg.MaxWorkers, cfg.CoreWorkers = 8, 2 // the SOAP service takes 8 calls at once
	fmt.Println(cfg.Validate() == nil, cfg.QueueCapacity)
	// Output: true 100
}

// Every pool of a Registry is created from the defaults or a named
// configuration, with the same options.
func ExampleWithConfig() {
	reg, err := pool.NewRegistry(pool.Config{MaxWorkers: 4},
		pool.WithConfig("legacy", pool.Config{MaxWorkers: 2, QueueCapacity: 10, MaxQueueWait: bulkhead.NoTimeout}),
		pool.WithClock(testkit.NewVirtualClock(time.Unix(0, 0)))) // an Option applies to every pool
	if err != nil {
		panic(err)
	}
	soap, _ := reg.GetWithConfig("soap", "legacy")
	fmt.Println(soap.Metrics().MaxWorkers, soap.Metrics().QueueCapacity)
	// Output: 2 10
}

// A callback that panics on a worker does not cost the worker: the handler
// gets the panic, the Future's other callbacks still run, and the worker
// takes the next task.
func ExampleWithCallbackPanicHandler() {
	handled := make(chan struct{})
	p, _ := pool.New("soap", pool.Config{MaxWorkers: 1, CoreWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout},
		pool.WithCallbackPanicHandler(func(v any, stack []byte) {
			fmt.Println("callback panicked:", v) // log it, with the stack
			close(handled)
		}))
	defer p.Close(context.Background())

	release := make(chan struct{})
	f := pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-release; return 1, nil })
	// Registered while f runs: the worker runs them. (On a Future already
	// done, OnDone runs a callback at once and its panic is the caller's.)
	f.OnDone(func(int, error) { panic("bad callback") })
	f.OnDone(func(v int, err error) { fmt.Println("second callback:", v, err) })
	close(release)
	<-handled // after every callback of f, on the worker

	fmt.Println(pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 2, nil }).Get(context.Background()))
	// Output:
	// second callback: 1 <nil>
	// callback panicked: bad callback
	// 2 <nil>
}

// KeepAlive and MaxQueueWait are measured on the pool's Clock: a test
// drives them with a virtual one instead of sleeping.
func ExampleWithClock() {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	p, _ := pool.New("soap", pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: time.Second}, pool.WithClock(clock))
	defer p.Close(context.Background())

	release := make(chan struct{})
	busy := pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-release; return 1, nil })
	queued := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 2, nil })
	clock.Advance(time.Second) // the queued task's MaxQueueWait passes
	var full *bulkhead.FullError
	fmt.Println(errors.As(queued.Err(), &full), full.Reason)
	close(release)
	fmt.Println(busy.Get(context.Background()))
	// Output:
	// true wait timeout
	// 1 <nil>
}
