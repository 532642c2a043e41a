package eventloop

import (
	"container/heap"
	"sync"
	"time"
)

// loop is one event loop: a goroutine that runs the tasks posted to its
// queue, in order, and the timers scheduled on it, as a Netty event loop
// runs I/O completions and scheduled tasks between tasks. Tasks are posted
// from any goroutine (the loop itself, bulkhead callbacks on other loops or
// on the bulkhead's timer); timers are scheduled only by tasks of this loop
// and, like tasks, only ever run on it. While the loop goroutine is blocked
// (Blocking mode), neither its tasks nor its timers run.
type loop struct {
	mu      sync.Mutex
	queue   []func()
	spare   []func()
	stopped bool
	wake    chan struct{} // capacity 1: a pending wake-up

	timers timerHeap // owned by the loop goroutine
	seq    uint64
}

func newLoop() *loop { return &loop{wake: make(chan struct{}, 1)} }

// post appends f to the queue. After stop it drops f.
func (l *loop) post(f func()) {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.queue = append(l.queue, f)
	first := len(l.queue) == 1
	l.mu.Unlock()
	if first {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// schedule runs f on the loop after d. It must be called on the loop.
func (l *loop) schedule(d time.Duration, f func()) {
	l.seq++
	heap.Push(&l.timers, timer{at: time.Now().Add(d), seq: l.seq, f: f})
}

// run alternates between the due timers and the queued tasks until stop
// is called; with nothing to do it sleeps until the next timer or a post.
func (l *loop) run() {
	sleep := time.NewTimer(time.Hour)
	defer sleep.Stop()
	for {
		now := time.Now()
		for len(l.timers) > 0 && !l.timers[0].at.After(now) {
			heap.Pop(&l.timers).(timer).f()
		}
		l.mu.Lock()
		if l.stopped {
			l.mu.Unlock()
			return
		}
		batch := l.queue
		l.queue, l.spare = l.spare[:0], nil
		l.mu.Unlock()
		for i, f := range batch {
			f()
			batch[i] = nil
		}
		l.mu.Lock()
		if l.spare == nil {
			l.spare = batch[:0]
		}
		idle := len(l.queue) == 0 && !l.stopped
		l.mu.Unlock()
		if !idle {
			continue
		}
		if len(l.timers) == 0 {
			<-l.wake
			continue
		}
		d := time.Until(l.timers[0].at)
		if d <= 0 {
			continue
		}
		sleep.Reset(d)
		select {
		case <-l.wake:
		case <-sleep.C:
		}
	}
}

func (l *loop) stop() {
	l.mu.Lock()
	l.stopped = true
	l.queue = nil
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

type timer struct {
	at  time.Time
	seq uint64 // FIFO among equal deadlines
	f   func()
}

type timerHeap []timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = timer{}
	*h = old[:len(old)-1]
	return x
}
