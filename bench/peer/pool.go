package peer

import (
	"context"
	"sync"
	"sync/atomic"
)

// Pool is the "thread-pool bulkhead" of Go: n worker goroutines that run the
// calls, fed from an unbounded FIFO of tasks. A permit is a worker: it stays
// busy on the caller's behalf until Release, as a pool thread stays busy
// for the length of a blocking call. Its fixed cost is n parked goroutines;
// a waiting caller costs a queued task.
//
// Invariants, guarded by mu: idle counts the workers parked in cond.Wait;
// a task is decided once by the CAS on its state (pending -> granted by the
// worker that takes it, pending -> cancelled by an Acquire whose ctx ended);
// a worker that wins the grant holds the permit until it receives one
// release token.
type Pool struct {
	mu     sync.Mutex
	cond   *sync.Cond
	queue  []*task
	head   int
	idle   int
	closed bool

	release chan struct{} // one token per Release; capacity n
	done    chan struct{} // closed by Close
	wg      sync.WaitGroup
}

type task struct {
	state atomic.Uint32 // 0 pending, 1 granted, 2 cancelled
	f     func(error)   // run on the worker when granted (may be nil)
	ready chan struct{} // closed on grant, for Acquire (may be nil)
}

// NewPool starts a Pool of n workers. Close stops them.
func NewPool(n int) *Pool {
	p := &Pool{release: make(chan struct{}, n), done: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	var started sync.WaitGroup
	started.Add(n)
	p.wg.Add(n)
	for range n {
		go p.work(&started)
	}
	// Every worker is parked (idle == n) once started.Wait returns, so
	// TryAcquire succeeds on a new Pool.
	started.Wait()
	return p
}

// Name returns "pool".
func (p *Pool) Name() string { return "pool" }

func (p *Pool) work(started *sync.WaitGroup) {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		for p.head == len(p.queue) && !p.closed {
			p.idle++
			if started != nil {
				started.Done() // still holding mu: NewPool sees idle after Wait releases it
				started = nil
			}
			p.cond.Wait()
			p.idle--
		}
		if p.closed {
			p.mu.Unlock()
			return
		}
		t := p.queue[p.head]
		p.queue[p.head] = nil
		p.head++
		if p.head == len(p.queue) {
			p.queue, p.head = p.queue[:0], 0
		}
		p.mu.Unlock()
		if !t.state.CompareAndSwap(0, 1) {
			continue // cancelled: this worker never held the permit
		}
		if t.ready != nil {
			close(t.ready)
		}
		if t.f != nil {
			t.f(nil)
		}
		select { // busy until the holder releases
		case <-p.release:
		case <-p.done:
			return
		}
	}
}

func (p *Pool) push(t *task) {
	p.mu.Lock()
	p.queue = append(p.queue, t)
	p.mu.Unlock()
	p.cond.Signal()
}

// TryAcquire hands a hold task to a worker if one is idle and no task is
// queued ahead of it.
func (p *Pool) TryAcquire() bool {
	p.mu.Lock()
	if p.idle <= len(p.queue)-p.head {
		p.mu.Unlock()
		return false
	}
	p.queue = append(p.queue, &task{})
	p.mu.Unlock()
	p.cond.Signal()
	return true
}

// Acquire queues a task and blocks until a worker takes it or ctx ends.
func (p *Pool) Acquire(ctx context.Context) error {
	t := &task{ready: make(chan struct{})}
	p.push(t)
	select {
	case <-t.ready:
		return nil
	case <-ctx.Done():
		if t.state.CompareAndSwap(0, 2) {
			return ctx.Err()
		}
		p.Release() // granted concurrently: give it back, as if ctx had won
		return ctx.Err()
	}
}

// AcquireAsync queues f; a worker runs it when one is free.
func (p *Pool) AcquireAsync(_ context.Context, f func(error)) { p.push(&task{f: f}) }

// Release frees the worker that holds the permit.
func (p *Pool) Release() { p.release <- struct{}{} }

// Close stops the workers and waits for them. Queued tasks are dropped.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	close(p.done)
	p.cond.Broadcast()
	p.wg.Wait()
}
