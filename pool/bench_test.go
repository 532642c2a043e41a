package pool_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
)

// executor is the tiny interface the pool benchmarks compare through: submit
// a task, get something to wait on.
type executor interface {
	submit(fn func() int) (wait func() int)
	close()
}

type poolExecutor struct{ p *pool.Pool }

func (e poolExecutor) submit(fn func() int) func() int {
	f := pool.Submit(context.Background(), e.p, func(context.Context) (int, error) { return fn(), nil })
	return func() int { <-f.Done(); return f.Value() }
}

func (e poolExecutor) close() { _ = e.p.Close(context.Background()) }

// chanExecutor is the baseline: a fixed set of goroutines reading a buffered
// channel, each task carrying its own result channel.
type chanExecutor struct {
	tasks chan chanTask
	wg    sync.WaitGroup
}

type chanTask struct {
	fn  func() int
	out chan int
}

func newChanExecutor(workers, queue int) *chanExecutor {
	e := &chanExecutor{tasks: make(chan chanTask, queue)}
	for range workers {
		e.wg.Go(func() {
			for t := range e.tasks {
				t.out <- t.fn()
			}
		})
	}
	return e
}

func (e *chanExecutor) submit(fn func() int) func() int {
	out := make(chan int, 1)
	e.tasks <- chanTask{fn, out}
	return func() int { return <-out }
}

func (e *chanExecutor) close() { close(e.tasks); e.wg.Wait() }

// BenchmarkPoolSubmitRun measures submit + run + wait throughput with a
// window of 256 tasks in flight (so the queue, 256 deep, never rejects).
func BenchmarkPoolSubmitRun(b *testing.B) {
	const window = 256
	for _, workers := range []int{1, 4, 16} {
		for _, kind := range []string{"pool", "chan"} {
			b.Run(fmt.Sprintf("workers=%d/%s", workers, kind), func(b *testing.B) {
				var e executor
				if kind == "pool" {
					p, err := pool.New("bench", pool.Config{MaxWorkers: workers, CoreWorkers: workers, QueueCapacity: window, MaxQueueWait: bulkhead.NoTimeout})
					if err != nil {
						b.Fatal(err)
					}
					e = poolExecutor{p}
				} else {
					e = newChanExecutor(workers, window)
				}
				defer e.close()
				task := func() int { return 1 }
				var ring [window]func() int
				b.ReportAllocs()
				b.ResetTimer()
				sum := 0
				for i := 0; i < b.N; i++ {
					if w := ring[i%window]; w != nil {
						sum += w()
					}
					ring[i%window] = e.submit(task)
				}
				for _, w := range ring {
					if w != nil {
						sum += w()
					}
				}
				if sum != b.N {
					b.Fatalf("%d tasks ran, want %d", sum, b.N)
				}
			})
		}
	}
}

// BenchmarkPoolQueuedTaskMemory reports the heap cost of one queued task
// (B/queued) and the goroutines queued tasks add (goroutines/queued,
// expected 0). One op is one task submitted to the queue behind a busy
// worker; tasks are queued in rounds of up to 100k (run it with
// -benchtime=100000x for the 100k figure). "cancellable" submits with a
// context that can end, which adds the context.AfterFunc registration that
// withdraws the task.
func BenchmarkPoolQueuedTaskMemory(b *testing.B) {
	const round = 100_000
	for _, cancellable := range []bool{false, true} {
		b.Run(fmt.Sprintf("cancellable=%v", cancellable), func(b *testing.B) {
			var heap, goroutines float64
			for done := 0; done < b.N; {
				n := min(round, b.N-done)
				h, g := poolQueueRound(b, n, cancellable)
				heap += h
				goroutines += g
				done += n
			}
			b.ReportMetric(heap/float64(b.N), "B/queued")
			b.ReportMetric(goroutines/float64(b.N), "goroutines/queued")
		})
	}
}

// poolQueueRound queues n tasks behind one busy worker and returns the heap
// bytes and goroutines they added, then lets them run.
func poolQueueRound(b *testing.B, n int, cancellable bool) (heap, goroutines float64) {
	b.StopTimer()
	p, err := pool.New("bench", pool.Config{MaxWorkers: 1, QueueCapacity: n, MaxQueueWait: bulkhead.NoTimeout})
	if err != nil {
		b.Fatal(err)
	}
	release := make(chan struct{})
	busy := pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-release; return 0, nil })
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if cancellable {
		ctx, cancel = context.WithCancel(ctx)
	}
	task := func(context.Context) (int, error) { return 1, nil }
	fs := make([]*pool.Future[int], n)
	before, goroutinesBefore := heapInUse(), runtime.NumGoroutine()
	b.StartTimer()
	for i := range fs {
		fs[i] = pool.Submit(ctx, p, task)
	}
	b.StopTimer()
	after, goroutinesAfter := heapInUse(), runtime.NumGoroutine()
	if d := p.Metrics().QueueDepth; d != n {
		b.Fatalf("QueueDepth = %d, want %d", d, n)
	}
	close(release)
	<-busy.Done()
	for _, f := range fs {
		<-f.Done()
	}
	cancel()
	_ = p.Close(context.Background())
	b.StartTimer()
	return float64(after) - float64(before), float64(goroutinesAfter - goroutinesBefore)
}

// BenchmarkPoolSubmitRunDirect is BenchmarkPoolSubmitRun without the
// executor interface: its allocations are the pool's own (the Future and the
// task's cancellable context).
func BenchmarkPoolSubmitRunDirect(b *testing.B) {
	const window = 256
	p, err := pool.New("bench", pool.Config{MaxWorkers: 4, CoreWorkers: 4, QueueCapacity: window, MaxQueueWait: bulkhead.NoTimeout})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(context.Background())
	task := func(context.Context) (int, error) { return 1, nil }
	var ring [window]*pool.Future[int]
	b.ReportAllocs()
	b.ResetTimer()
	sum := 0
	for i := 0; i < b.N; i++ {
		if f := ring[i%window]; f != nil {
			<-f.Done()
			sum += f.Value()
		}
		ring[i%window] = pool.Submit(context.Background(), p, task)
	}
	for _, f := range ring {
		if f != nil {
			<-f.Done()
			sum += f.Value()
		}
	}
	if sum != b.N {
		b.Fatalf("%d tasks ran, want %d", sum, b.N)
	}
}

// heapInUse is the live heap after two collections.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
