package linearizability

import (
	"container/heap"
	"sync"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/semhook"
)

// Clock is the bulkhead.Clock of a history: virtual time that moves only
// when a client calls Advance, recorded as operations (Tick) so that the
// model knows the time every other operation saw.
//
// Advance moves time one step at a time, as testkit.VirtualClock does: to
// the deadline of each timer that falls due, whose func it then runs, and
// at last to its target. Each step is one Tick operation, recorded around
// the clock's critical section, so it is atomic. Advances are serialised
// (advancing), so timer funcs, and thus the Semaphore's sweeps, run one at
// a time, on the advancing goroutine, while the clock stands still: every
// batch of a sweep sees the time of the last Tick before it. What the
// sweeps decide is recorded through internal/semhook (Hooks).
type Clock struct {
	r     *Recorder
	start time.Time

	mu     sync.Mutex
	now    time.Duration // since start
	seq    uint64
	timers timerHeap

	advancing sync.Mutex // held by the goroutine in Advance
	// Owned by the goroutine holding advancing.
	client    int   // the advancing client
	batchCall int64 // Call time of the sweep batch under way
	batch     int   // the batch size the sweeps use
}

// NewClock returns a Clock at time zero whose steps are recorded in r. Its
// sweeps run in batches of batch waiters (0: the Semaphore's default).
func NewClock(r *Recorder, batch int) *Clock {
	return &Clock{r: r, start: time.Unix(0, 0), batch: batch}
}

// Hooks returns the Semaphore hooks that record, as operations of the
// history, each grant and expiry the Semaphore decides (Grant, Expire,
// around the waiter's decision, under the Semaphore's lock) and the end of
// each sweep (Swept, around its last batch, under the advancing client's
// number); install them with semhook.Set while the history runs. A
// Semaphore sweeps only in a timer func, which only Advance runs.
func (c *Clock) Hooks() *semhook.Hooks {
	r := c.r
	return &semhook.Hooks{
		Batch: c.batch,
		Lock:  func() { c.batchCall = r.clock.Add(1) },
		Unlock: func(b semhook.Batch) {
			if b.Last {
				r.add(c.client, Input{Kind: Swept}, Output{}, c.batchCall)
			}
		},
		// Both run under the Semaphore's lock, which orders r.deciding.
		Deciding: func() { r.deciding = r.clock.Add(1) },
		Decided:  func(w any) { r.decided(w.(*bulkhead.Acquisition), r.deciding) },
	}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.start.Add(c.now)
}

// AfterFunc schedules f to run on the advancing goroutine once the clock
// reaches Now()+d; a timer due now fires at the next Advance.
func (c *Clock) AfterFunc(d time.Duration, f func()) bulkhead.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &timer{c: c, when: c.now + max(d, 0), seq: c.seq, f: f}
	heap.Push(&c.timers, t)
	return t
}

// Since returns the clock's time since its start.
func (c *Clock) Since() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AdvanceTo moves the clock forward to target (since its start) as client,
// firing the timers that fall due on the way. A panic of a timer func (a
// callback of the Semaphore's sweep) goes on to the caller; the timers
// still due fire at the next advance.
func (c *Clock) AdvanceTo(client int, target time.Duration) {
	c.advancing.Lock()
	defer c.advancing.Unlock()
	c.client = client
	for {
		f := c.step(client, target)
		if f == nil {
			return
		}
		f()
	}
}

// step moves the clock to the next due timer and pops it, or, if none is
// due by target, to target; it records the move as a Tick.
func (c *Clock) step(client int, target time.Duration) (f func()) {
	call := c.r.clock.Add(1)
	c.mu.Lock()
	to := target
	if len(c.timers) > 0 && c.timers[0].when <= target {
		t := heap.Pop(&c.timers).(*timer)
		f, t.f = t.f, nil
		to = max(t.when, c.now)
	}
	moved := to > c.now
	c.now = max(to, c.now)
	c.mu.Unlock()
	if moved {
		c.r.add(client, Input{Kind: Tick, At: to}, Output{}, call)
	}
	return f
}

// timer is one AfterFunc call; its fields are guarded by its clock's mu,
// index is -1 once it has fired or been stopped.
type timer struct {
	c     *Clock
	when  time.Duration
	seq   uint64
	f     func()
	index int
}

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&t.c.timers, t.index)
	t.f = nil
	return true
}

type timerHeap []*timer

func (q timerHeap) Len() int { return len(q) }
func (q timerHeap) Less(i, j int) bool {
	if q[i].when == q[j].when {
		return q[i].seq < q[j].seq
	}
	return q[i].when < q[j].when
}
func (q timerHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*q)
	*q = append(*q, t)
}
func (q *timerHeap) Pop() any {
	old := *q
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*q = old[:len(old)-1]
	return t
}

var _ bulkhead.Clock = (*Clock)(nil)
