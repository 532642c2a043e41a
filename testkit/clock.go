package testkit

import (
	"container/heap"
	"fmt"
	"sync"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// VirtualClock is a bulkhead.Clock whose time moves only when the test says
// so. Pass it to a bulkhead with bulkhead.WithClock and move it with Advance
// or AdvanceTo: a wait timeout of an hour is then tested in microseconds of
// real time, with no sleep and no flake.
//
// Timers scheduled with AfterFunc fire on the goroutine that advances the
// clock, in deadline order, ties in the order they were scheduled. A timer
// that a firing timer schedules also fires within the same advance if it
// falls due by the advance's target time. While a timer's func runs, Now
// returns that timer's deadline; when the advance returns, Now returns the
// target time.
//
// Timer funcs never run while the clock's lock is held, so they may call any
// method of the clock, including AfterFunc, Stop and Advance. AfterFunc never
// runs f before it returns, even for d <= 0: such a timer is due at once and
// fires at the next Advance or AdvanceTo (Advance(0) will do).
//
// A VirtualClock is safe for concurrent use. Concurrent Advance calls each
// fire the timers they pop in deadline order, but the timers of two
// concurrent advances may interleave; serialise advances when order across
// them matters. The zero value is a clock stopped at the zero time.Time,
// ready to use; NewVirtualClock starts one at a chosen time.
type VirtualClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64     // scheduling order, breaks deadline ties
	timers timerQueue // pending timers, earliest deadline first
	added  broadcast  // notified when a timer is scheduled
}

// NewVirtualClock returns a VirtualClock whose Now is start until it is
// advanced.
func NewVirtualClock(start time.Time) *VirtualClock {
	return &VirtualClock{now: start}
}

// Now returns the clock's current time. It moves only with Advance and
// AdvanceTo.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Since returns the virtual time elapsed since t.
func (c *VirtualClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// AfterFunc schedules f to run on the advancing goroutine once the clock
// reaches Now()+d, and returns a Timer whose Stop cancels it. It never runs f
// itself: a timer with d <= 0 is due at once and fires at the next Advance or
// AdvanceTo. It panics if f is nil.
func (c *VirtualClock) AfterFunc(d time.Duration, f func()) bulkhead.Timer {
	if f == nil {
		panic("testkit: VirtualClock.AfterFunc called with a nil func")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &virtualTimer{clock: c, when: c.now.Add(max(d, 0)), seq: c.seq, f: f}
	heap.Push(&c.timers, t)
	c.added.notify()
	return t
}

// Advance moves the clock forward by d and fires, on the calling goroutine,
// every timer that falls due by then (see VirtualClock for the order). It
// returns once they have all run. Advance(0) fires the timers already due.
// It panics if d is negative: virtual time never goes back.
func (c *VirtualClock) Advance(d time.Duration) {
	if d < 0 {
		panic(fmt.Sprintf("testkit: VirtualClock.Advance(%v): negative duration, time cannot go back", d))
	}
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	c.advanceTo(target)
}

// AdvanceTo moves the clock forward to t and fires the timers that fall due
// by then, like Advance. It panics if t is before Now.
func (c *VirtualClock) AdvanceTo(t time.Time) {
	c.mu.Lock()
	now := c.now
	c.mu.Unlock()
	if t.Before(now) {
		panic(fmt.Sprintf("testkit: VirtualClock.AdvanceTo(%v): before Now (%v), time cannot go back", t, now))
	}
	c.advanceTo(t)
}

// advanceTo pops due timers one at a time under the lock and runs each
// outside it. Popping marks a timer as started, so a Stop racing with it
// returns false, and each timer runs exactly once even under concurrent
// advances. Timers scheduled by a running timer are seen by the next pop.
func (c *VirtualClock) advanceTo(target time.Time) {
	for {
		c.mu.Lock()
		if len(c.timers) == 0 || c.timers[0].when.After(target) {
			if target.After(c.now) {
				c.now = target
			}
			c.mu.Unlock()
			return
		}
		t := heap.Pop(&c.timers).(*virtualTimer)
		if t.when.After(c.now) {
			c.now = t.when
		}
		f := t.f
		t.f = nil
		c.mu.Unlock()
		f()
	}
}

// PendingTimers returns the number of timers scheduled and neither fired
// (nor firing) nor stopped.
func (c *VirtualClock) PendingTimers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// AwaitTimers blocks until at least n timers are pending, or timeout passes
// on the real clock (the fake one inside a testing/synctest bubble), and
// reports whether n were reached. Use it before Advance when the code under
// test schedules its timer on another goroutine (an rxgo pipeline, say), so
// that the advance does not run before the timer exists.
func (c *VirtualClock) AwaitTimers(n int, timeout time.Duration) bool {
	return waitUntil(&c.mu, &c.added, timeout, func() bool { return len(c.timers) >= n })
}

// NextDeadline returns the deadline of the earliest pending timer, and false
// if there is none.
func (c *VirtualClock) NextDeadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return time.Time{}, false
	}
	return c.timers[0].when, true
}

// virtualTimer is one AfterFunc call. Its fields are guarded by clock.mu;
// index is its position in the heap, -1 once it has fired or been stopped.
type virtualTimer struct {
	clock *VirtualClock
	when  time.Time
	seq   uint64
	f     func()
	index int
}

// Stop cancels the timer if it has not started firing and reports whether it
// did. It is safe to call from a timer func and more than once.
func (t *virtualTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&c.timers, t.index)
	t.f = nil
	return true
}

// timerQueue is a min-heap of timers by (when, seq).
type timerQueue []*virtualTimer

func (q timerQueue) Len() int { return len(q) }

func (q timerQueue) Less(i, j int) bool {
	if q[i].when.Equal(q[j].when) {
		return q[i].seq < q[j].seq
	}
	return q[i].when.Before(q[j].when)
}

func (q timerQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index = i
	q[j].index = j
}

func (q *timerQueue) Push(x any) {
	t := x.(*virtualTimer)
	t.index = len(*q)
	*q = append(*q, t)
}

func (q *timerQueue) Pop() any {
	old := *q
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	t.index = -1
	*q = old[:n-1]
	return t
}

var _ bulkhead.Clock = (*VirtualClock)(nil)
