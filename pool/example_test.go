package pool_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/callcount"
	"github.com/rxbulkhead/bulkhead/pool"
)

// legacyQuote stands for a blocking client that ignores contexts (a SOAP
// library, a file transfer): the reason to use a Pool rather than a Semaphore.
func legacyQuote(sku string) (float64, error) { return float64(len(sku)) * 1.5, nil }

func ExampleNew() {
	p, err := pool.New("legacy-soap", pool.Config{
		MaxWorkers:    4,  // what the SOAP endpoint can take at once
		CoreWorkers:   1,  // kept while idle
		QueueCapacity: 16, // beyond this, fail fast
		KeepAlive:     30 * time.Second,
		MaxQueueWait:  bulkhead.NoTimeout,
	})
	if err != nil {
		panic(err)
	}
	defer p.Close(context.Background())

	f := pool.Submit(context.Background(), p, func(ctx context.Context) (float64, error) {
		return legacyQuote("ABC-123")
	})
	price, err := f.Get(context.Background())
	fmt.Println(price, err)

	_, err = pool.New("bad", pool.Config{MaxWorkers: 2, CoreWorkers: 5})
	fmt.Println(err)
	// Output:
	// 10.5 <nil>
	// bulkhead "bad": invalid config: CoreWorkers must be <= MaxWorkers (2), got 5
}

func ExampleSubmit() {
	p, _ := pool.New("sftp", pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout})
	defer p.Close(context.Background())

	release := make(chan struct{})
	transfer := func(name string) func(context.Context) (string, error) {
		return func(context.Context) (string, error) {
			<-release // a blocking transfer
			return name + " sent", nil
		}
	}
	running := pool.Submit(context.Background(), p, transfer("a.edi"))
	queued := pool.Submit(context.Background(), p, transfer("b.edi"))
	rejected := pool.Submit(context.Background(), p, transfer("c.edi"))

	// Rejection is immediate: the caller never blocks.
	fmt.Println(rejected.Err())
	fmt.Println(errors.Is(rejected.Err(), bulkhead.ErrBulkheadFull))

	close(release)
	for _, f := range []*pool.Future[string]{running, queued} {
		fmt.Println(f.Get(context.Background()))
	}
	// Output:
	// bulkhead "sftp": full, does not permit further calls (queue full)
	// true
	// a.edi sent <nil>
	// b.edi sent <nil>
}

func ExampleFuture_OnDone() {
	p, _ := pool.New("soap", pool.Config{MaxWorkers: 2})
	defer p.Close(context.Background())

	done := make(chan struct{})
	f := pool.Submit(context.Background(), p, func(context.Context) (float64, error) {
		return legacyQuote("XYZ")
	})
	// Runs on the worker once the quote is there, or at once if it already is.
	f.OnDone(func(price float64, err error) {
		fmt.Println("quote:", price, err)
		close(done)
	})
	<-done
	// Output:
	// quote: 4.5 <nil>
}

func ExampleFuture_Cancel() {
	p, _ := pool.New("soap", pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout})
	defer p.Close(context.Background())

	started, release := make(chan struct{}), make(chan struct{})
	busy := pool.Submit(context.Background(), p, func(context.Context) (int, error) {
		close(started)
		<-release
		return 1, nil
	})
	<-started
	queued := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 2, nil })

	fmt.Println(queued.Cancel(), queued.Err(), queued.Ran())
	close(release)
	fmt.Println(busy.Get(context.Background()))
	// Output:
	// true bulkhead: cancelled while waiting false
	// 1 <nil>
}

func ExampleFuture_Get() {
	p, _ := pool.New("soap", pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout})
	defer p.Close(context.Background())

	started, release := make(chan struct{}), make(chan struct{})
	busy := pool.Submit(context.Background(), p, func(context.Context) (int, error) {
		close(started)
		<-release
		return 1, nil
	})
	<-started

	// The submission context bounds the wait in the queue: when it ends,
	// the task is withdrawn without running.
	ctx, cancel := context.WithCancel(context.Background())
	queued := pool.Submit(ctx, p, func(context.Context) (int, error) { return 2, nil })
	cancel()
	_, err := queued.Get(context.Background())
	fmt.Println(errors.Is(err, bulkhead.ErrCancelled), errors.Is(err, context.Canceled), queued.Ran())

	close(release)
	fmt.Println(busy.Get(context.Background()))
	// Output:
	// true true false
	// 1 <nil>
}

func ExamplePool_Close() {
	p, _ := pool.New("sftp", pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout})

	started := make(chan struct{})
	stuck := pool.Submit(context.Background(), p, func(ctx context.Context) (string, error) {
		close(started)
		<-ctx.Done() // a transfer that honours its context
		return "", context.Cause(ctx)
	})
	<-started
	queued := pool.Submit(context.Background(), p, func(context.Context) (string, error) { return "sent", nil })

	// Close drains until its context ends, then cancels what is left. Here
	// the context has already ended: cancel at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fmt.Println("close:", p.Close(ctx))
	fmt.Println("queued:", errors.Is(queued.Err(), pool.ErrClosed), errors.Is(queued.Err(), bulkhead.ErrCancelled))
	_, err := stuck.Get(context.Background())
	fmt.Println("running:", err)
	fmt.Println("wait:", p.Close(context.Background()))
	fmt.Println("after:", pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 0, nil }).Err())
	// Output:
	// close: context canceled
	// queued: true true
	// running: pool: closed
	// wait: <nil>
	// after: pool: closed
}

func ExamplePool_OnEvent() {
	p, _ := pool.New("soap", pool.Config{MaxWorkers: 1})
	defer p.Close(context.Background())
	events := make(chan bulkhead.EventType, 4)
	remove := p.OnEvent(func(e bulkhead.Event) { events <- e.Type })
	defer remove()

	f := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 1, nil })
	<-f.Done()
	fmt.Println(<-events, <-events)
	// Output:
	// permitted finished
}

func ExamplePool_Metrics() {
	p, _ := pool.New("soap", pool.Config{MaxWorkers: 2, QueueCapacity: 10, MaxQueueWait: bulkhead.NoTimeout})
	defer p.Close(context.Background())

	release := make(chan struct{})
	var fs []*pool.Future[int]
	for range 5 {
		fs = append(fs, pool.Submit(context.Background(), p, func(context.Context) (int, error) {
			<-release
			return 0, nil
		}))
	}
	m := p.Metrics()
	fmt.Printf("workers %d/%d, queue %d/%d, room for %d\n", m.PoolSize, m.MaxWorkers, m.QueueDepth, m.QueueCapacity, m.RemainingQueueCapacity)
	close(release)
	for _, f := range fs {
		<-f.Done()
	}
	// Output:
	// workers 2/2, queue 3/10, room for 7
}

func ExampleNewRegistry() {
	r, err := pool.NewRegistry(pool.DefaultConfig(),
		pool.WithConfig("slow-partner", pool.Config{MaxWorkers: 2, QueueCapacity: 5, MaxQueueWait: bulkhead.NoTimeout}))
	if err != nil {
		panic(err)
	}
	defer r.Close(context.Background())

	soap, _ := r.GetWithConfig("walmart-soap", "slow-partner")
	same, _ := r.Get("walmart-soap") // an existing pool keeps its configuration
	fmt.Println(soap == same, same.Config().MaxWorkers)
	// Output:
	// true 2
}

// A pool.Registry as a bulkhead.MetricsSource: the metrics exporters
// (contrib/prometheus, contrib/otel) and callcount take it as they take a
// bulkhead.Registry, so pools export the metric set of every bulkhead.
func ExampleRegistry_MetricsSource() {
	registry, err := pool.NewRegistry(pool.Config{MaxWorkers: 4})
	if err != nil {
		log.Fatal(err)
	}
	defer registry.Close(context.Background())
	counter := callcount.New(registry.MetricsSource())
	defer counter.Close()

	resizer, _ := registry.Get("resizer") // created after the counter: counted from its creation
	for name, m := range registry.MetricsSource().AllMetrics() {
		fmt.Println(name, m.AvailableConcurrentCalls, "of", m.MaxAllowedConcurrentCalls, "workers free")
	}
	f := pool.Submit(context.Background(), resizer, func(context.Context) (string, error) { return "thumbnail.png", nil })
	if _, err := f.Get(context.Background()); err != nil {
		log.Fatal(err)
	}
	// Get returns once the outcome is decided; the worker is free again
	// only after the task's callbacks have run on it, so its metrics are
	// not read here.
	fmt.Printf("%+v\n", counter.Counts("resizer"))
	// Output:
	// resizer 4 of 4 workers free
	// {Permitted:1 Rejected:0 Finished:1 Cancelled:0}
}
