package bulkhead_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// durations records the CallDuration of every CallFinished of s.
type durations struct {
	mu sync.Mutex
	d  []time.Duration
}

func recordDurations(t *testing.T, s interface {
	OnEvent(func(bulkhead.Event)) func()
}) *durations {
	r := &durations{}
	t.Cleanup(s.OnEvent(func(e bulkhead.Event) {
		if e.Type != bulkhead.CallFinished {
			return
		}
		r.mu.Lock()
		r.d = append(r.d, e.CallDuration)
		r.mu.Unlock()
	}))
	return r
}

func (r *durations) all() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.d)
}

func TestFinishCallStartedReportsTheTimeFromTheGrant(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	s := newSemaphore(t, "d", bulkhead.Config{MaxConcurrentCalls: 2}, bulkhead.WithClock(clock))
	d := recordDurations(t, s)
	clock.Advance(time.Second)
	require.True(t, s.TryAcquirePermission())
	start := s.StartCall()
	clock.Advance(30 * time.Millisecond)
	require.NoError(t, s.AcquirePermissionAsync().Err())
	start2 := s.StartCall()
	clock.Advance(20 * time.Millisecond)
	s.FinishCallStarted(start)
	s.FinishCallStarted(start2)
	assert.Equal(t, []time.Duration{50 * time.Millisecond, 20 * time.Millisecond}, d.all())
}

func TestBareFinishCallReportsNoCallDuration(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	s := newSemaphore(t, "d", bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.WithClock(clock))
	d := recordDurations(t, s)
	require.True(t, s.TryAcquirePermission())
	clock.Advance(time.Second)
	s.FinishCall()
	require.True(t, s.TryAcquirePermission())
	clock.Advance(time.Second)
	s.FinishCallStarted(bulkhead.CallStart{})
	assert.Equal(t, []time.Duration{0, 0}, d.all())
}

// countingClock counts its Now calls.
type countingClock struct {
	*testkit.VirtualClock
	n atomic.Int64
}

func (c *countingClock) Now() time.Time { c.n.Add(1); return c.VirtualClock.Now() }

func TestStartCallWithoutAListenerIsZeroAndReadsNoClock(t *testing.T) {
	clock := &countingClock{VirtualClock: testkit.NewVirtualClock(time.Unix(0, 0))}
	s := newSemaphore(t, "d", bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.WithClock(clock))
	require.True(t, s.TryAcquirePermission())
	before := clock.n.Load()
	start := s.StartCall()
	s.FinishCallStarted(start)
	assert.Equal(t, bulkhead.CallStart{}, start)
	assert.Equal(t, before, clock.n.Load(), "clock reads")

	// With a listener, StartCall still reads no clock: the grant's event
	// read it.
	recordDurations(t, s)
	require.True(t, s.TryAcquirePermission())
	before = clock.n.Load()
	start = s.StartCall()
	assert.Equal(t, before, clock.n.Load(), "clock reads of StartCall")
	assert.NotEqual(t, bulkhead.CallStart{}, start)
	s.FinishCallStarted(start)
}

func TestACallGrantedBeforeTheFirstListenerReportsNoDuration(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	s := newSemaphore(t, "d", bulkhead.Config{MaxConcurrentCalls: 2}, bulkhead.WithClock(clock))
	remove := s.OnEvent(func(bulkhead.Event) {})
	require.True(t, s.TryAcquirePermission()) // stamped
	s.FinishCall()
	remove()
	clock.Advance(time.Second)
	require.True(t, s.TryAcquirePermission()) // no listener: not stamped
	clock.Advance(time.Second)
	// The stamp of the earlier grant must not become this call's start.
	d := recordDurations(t, s)
	start := s.StartCall()
	clock.Advance(time.Second)
	s.FinishCallStarted(start)
	assert.Equal(t, []time.Duration{0}, d.all())
}

func TestAQueuedCallStartsAtItsOwnGrant(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	s := newSemaphore(t, "d", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: 4}, bulkhead.WithClock(clock))
	d := recordDurations(t, s)
	require.True(t, s.TryAcquirePermission())
	first := s.StartCall()
	a := s.AcquirePermissionAsync()
	var start bulkhead.CallStart
	a.OnDone(func(err error) {
		require.NoError(t, err)
		start = s.StartCall()
	})
	clock.Advance(40 * time.Millisecond)
	s.FinishCallStarted(first) // hands the permit to a: the slow release path
	clock.Advance(25 * time.Millisecond)
	s.FinishCallStarted(start)
	assert.Equal(t, []time.Duration{40 * time.Millisecond, 25 * time.Millisecond}, d.all())
}

func TestABlockingWaiterStartsAtItsOwnGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := testkit.NewVirtualClock(time.Unix(0, 0))
		s := newSemaphore(t, "d", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: bulkhead.NoTimeout, MaxQueuedCalls: 4}, bulkhead.WithClock(clock))
		d := recordDurations(t, s)
		require.True(t, s.TryAcquirePermission())
		first := s.StartCall()
		got := make(chan bulkhead.CallStart)
		go func() {
			if err := s.AcquirePermission(context.Background()); err != nil {
				panic(err)
			}
			got <- s.StartCall()
		}()
		synctest.Wait() // queued
		clock.Advance(10 * time.Millisecond)
		s.FinishCallStarted(first)
		start := <-got
		clock.Advance(7 * time.Millisecond)
		s.FinishCallStarted(start)
		assert.Equal(t, []time.Duration{10 * time.Millisecond, 7 * time.Millisecond}, d.all())
	})
}

func TestShadowGrantsAreStartsToo(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	s := newSemaphore(t, "d", bulkhead.Config{MaxConcurrentCalls: 1, ShadowMode: true}, bulkhead.WithClock(clock))
	d := recordDurations(t, s)
	require.True(t, s.TryAcquirePermission())
	a := s.StartCall()
	clock.Advance(time.Millisecond)
	require.True(t, s.TryAcquirePermission()) // shadowed: would have been rejected
	b := s.StartCall()
	clock.Advance(time.Millisecond)
	s.FinishCallStarted(b)
	s.FinishCallStarted(a)
	assert.Equal(t, []time.Duration{time.Millisecond, 2 * time.Millisecond}, d.all())
}

func TestLeaseReportsTheCallDurationOnEveryKeyedPath(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: 4},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	require.NoError(t, err)
	d := recordDurations(t, r)

	l, err := r.TryAcquirePermission("k", bulkhead.CallOptions{})
	require.NoError(t, err)
	clock.Advance(time.Millisecond)
	l.FinishCall()

	l, err = r.AcquirePermission(context.Background(), "k", bulkhead.CallOptions{})
	require.NoError(t, err)
	clock.Advance(2 * time.Millisecond)
	l.FinishCall()

	a, l := r.AcquirePermissionAsync("k", bulkhead.CallOptions{}) // granted at once
	require.NoError(t, a.Err())
	clock.Advance(3 * time.Millisecond)

	q, ql := r.AcquirePermissionAsync("k", bulkhead.CallOptions{}) // queued behind l
	granted := make(chan bulkhead.Lease, 1)
	q.OnDone(func(err error) {
		require.NoError(t, err)
		ql.StartCall()
		granted <- ql
	})
	clock.Advance(time.Second) // q's wait: not part of its call
	l.FinishCall()
	ql = <-granted
	clock.Advance(4 * time.Millisecond)
	ql.FinishCall()

	assert.Equal(t, []time.Duration{time.Millisecond, 2 * time.Millisecond, 1003 * time.Millisecond, 4 * time.Millisecond}, d.all())
	assert.Panics(t, func() { (&bulkhead.Lease{}).StartCall() })
}

func TestEventStringShowsTheCallDuration(t *testing.T) {
	e := bulkhead.Event{Type: bulkhead.CallFinished, Name: "p", Time: time.Unix(0, 0).UTC(), CallDuration: 1500 * time.Millisecond}
	assert.Equal(t, `1970-01-01T00:00:00Z bulkhead "p": finished after running 1.5s`, e.String())
}

// seqClock is a clock whose every reading is one nanosecond after the
// previous one, whichever goroutine reads it: readings are unique and in
// the order of the reads.
type seqClock struct {
	*testkit.VirtualClock
	n atomic.Int64
}

func (c *seqClock) Now() time.Time { return time.Unix(0, c.n.Add(1)) }

// gid returns the calling goroutine's id, to tell which call a listener
// running on that goroutine reports.
func gid() string {
	var b [64]byte
	st := string(b[:runtime.Stack(b[:], false)])
	st = st[len("goroutine "):]
	for i := range len(st) {
		if st[i] == ' ' {
			return st[:i]
		}
	}
	return st
}

// finishes are the CallFinished events published on each goroutine, in
// order: a goroutine that gives a permit back also runs the callbacks of the
// call it grants, whose calls finish on it too.
type finishes struct {
	mu sync.Mutex
	by map[string][]bulkhead.Event
}

func (f *finishes) record(e bulkhead.Event) {
	if e.Type != bulkhead.CallFinished {
		return
	}
	g := gid()
	f.mu.Lock()
	f.by[g] = append(f.by[g], e)
	f.mu.Unlock()
}

// after returns the first CallFinished this goroutine published after the
// clock reading t.
func (f *finishes) after(t int64) (bulkhead.Event, bool) {
	g := gid()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.by[g] {
		if e.Time.UnixNano() > t {
			return e, true
		}
	}
	return bulkhead.Event{}, false
}

// TestStressCallDurationLiesBetweenTheGrantAndStartCall hammers the grant
// stamps: many goroutines acquire one Semaphore through every path
// (TryAcquirePermission, AcquirePermission, AcquirePermissionAsync with its
// start taken in a callback that may re-enter, block or panic), take their
// start and finish, on a clock whose readings are unique and ordered. The
// invariant: a call's CallDuration is at least the time from its StartCall
// to its FinishCallStarted, and at most the time from before it asked for
// the permit to after it finished, so its start lies between its own
// grant and its StartCall, however the stamping goroutines interleave.
func TestStressCallDurationLiesBetweenTheGrantAndStartCall(t *testing.T) {
	clock := &seqClock{VirtualClock: testkit.NewVirtualClock(time.Unix(0, 0))}
	s := newSemaphore(t, "stress", bulkhead.Config{MaxConcurrentCalls: 3, MaxWaitDuration: bulkhead.NoTimeout, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(clock))
	f := &finishes{by: map[string][]bulkhead.Event{}}
	t.Cleanup(s.OnEvent(f.record))
	t.Cleanup(s.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallPermitted && e.Time.UnixNano()%97 == 0 {
			panic("a listener that panics") // recovered by the Semaphore
		}
	}))
	now := func() int64 { return clock.Now().UnixNano() }
	var violations atomic.Int64
	// check finds the call's CallFinished: the first one its goroutine
	// published after innerTo, the reading just before FinishCallStarted.
	check := func(outerFrom, innerFrom, innerTo, outerTo int64) {
		e, ok := f.after(innerTo)
		if !ok {
			violations.Add(1)
			t.Errorf("no CallFinished on the finishing goroutine")
			return
		}
		dur := int64(e.CallDuration)
		if dur < innerTo-innerFrom || dur > outerTo-outerFrom {
			violations.Add(1)
			t.Errorf("CallDuration %d outside [%d, %d]", dur, innerTo-innerFrom, outerTo-outerFrom)
		}
	}
	const workers, rounds = 8, 400
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				before := now()
				switch (w + i) % 3 {
				case 0:
					if !s.TryAcquirePermission() {
						continue
					}
				case 1:
					if err := s.AcquirePermission(context.Background()); err != nil {
						panic(err)
					}
				case 2:
					a := s.AcquirePermissionAsync()
					done := make(chan struct{})
					a.OnDone(func(err error) {
						defer close(done)
						if err != nil {
							panic(err)
						}
						start := s.StartCall()
						from := now()
						if i%5 == 0 { // re-enter: a nested call on the same Semaphore
							if s.TryAcquirePermission() {
								s.FinishCallStarted(s.StartCall())
							}
						}
						if i%7 == 0 {
							for range 10 {
								runtime.Gosched() // a callback that takes its time
							}
						}
						to := now()
						s.FinishCallStarted(start)
						check(before, from, to, now())
					})
					<-done
					continue
				}
				start := s.StartCall()
				from := now()
				to := now()
				s.FinishCallStarted(start)
				check(before, from, to, now())
			}
		})
	}
	wg.Wait()
	assert.Zero(t, violations.Load())
	assert.Equal(t, 3, s.Metrics().AvailableConcurrentCalls)
}

func TestRegistryAllMetricsYieldsEveryBulkheadInNameOrder(t *testing.T) {
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 3}, bulkhead.WithMaxBulkheads(5, bulkhead.Config{MaxConcurrentCalls: 1}))
	require.NoError(t, err)
	for _, n := range []string{"b", "a", "c"} {
		_, err := r.Get(n)
		require.NoError(t, err)
	}
	s, _ := r.Find("b")
	require.True(t, s.TryAcquirePermission())
	defer s.FinishCall()
	var names []string
	var inFlight []int
	for name, m := range r.AllMetrics() {
		names = append(names, name)
		inFlight = append(inFlight, m.InFlightCalls)
	}
	assert.Equal(t, []string{"a", "b", "c", bulkhead.CatchAllName}, names)
	assert.Equal(t, []int{0, 1, 0, 0}, inFlight)
	for name := range r.AllMetrics() {
		assert.Equal(t, "a", name)
		break // an iteration that stops early
	}
	var src bulkhead.MetricsSource = r
	assert.Equal(t, 4, src.Stats().Bulkheads)
}

// A CallStart given to another Semaphore's FinishCallStarted: the permit
// is given back and CallFinished published (without a duration), then it
// panics naming the bulkhead. Before, a Semaphore that had never stamped a
// grant (its listener registered after the grant) dereferenced a nil epoch
// in the release path, and one that had reported a duration measured from
// the other Semaphore's epoch.
func TestFinishCallStartedRefusesTheCallStartOfAnotherSemaphore(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	a := newSemaphore(t, "a", bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.WithClock(clock))
	recordDurations(t, a)
	clock.Advance(time.Hour)
	require.True(t, a.TryAcquirePermission())
	foreign := a.StartCall()
	require.NotEqual(t, bulkhead.CallStart{}, foreign)
	defer a.FinishCallStarted(foreign)

	for _, tc := range []struct {
		name          string
		stampedBefore bool // the Semaphore has stamps of its own
	}{{"never stamped", false}, {"stamped", true}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newSemaphore(t, "b", bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.WithClock(clock))
			if tc.stampedBefore {
				remove := b.OnEvent(func(bulkhead.Event) {})
				require.True(t, b.TryAcquirePermission())
				b.FinishCall()
				remove()
			}
			require.True(t, b.TryAcquirePermission())
			d := recordDurations(t, b) // after the grant: b's own start would be zero
			clock.Advance(time.Second)
			msg := func() (msg string) {
				defer func() { msg = fmt.Sprint(recover()) }()
				b.FinishCallStarted(foreign)
				return "no panic"
			}()
			assert.Equal(t, `bulkhead "b": FinishCallStarted given the CallStart of another bulkhead`, msg)
			assert.Equal(t, []time.Duration{0}, d.all(), "CallFinished, without a duration")
			assert.Equal(t, 1, b.Metrics().AvailableConcurrentCalls, "the permit was given back")
		})
	}
}

// One call's start given back twice: the second is one release too many
// and panics naming the bulkhead, and the Semaphore stays consistent.
func TestFinishCallStartedTwicePanicsNamingTheBulkheadAndLeavesItConsistent(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	s := newSemaphore(t, "twice", bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.WithClock(clock))
	d := recordDurations(t, s)
	require.True(t, s.TryAcquirePermission())
	start := s.StartCall()
	clock.Advance(time.Second)
	s.FinishCallStarted(start)
	assert.PanicsWithValue(t, `bulkhead "twice": released more permits than were acquired`, func() { s.FinishCallStarted(start) })
	assert.Equal(t, []time.Duration{time.Second}, d.all(), "one CallFinished")
	assert.Equal(t, 1, s.Metrics().AvailableConcurrentCalls)
	require.True(t, s.TryAcquirePermission())
	s.FinishCall()
}

// jumpingClock is a virtual clock whose readings can be set back.
type jumpingClock struct {
	*testkit.VirtualClock
	mu   sync.Mutex
	back time.Duration
}

func (c *jumpingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.VirtualClock.Now().Add(-c.back)
}

func (c *jumpingClock) jumpBack(d time.Duration) { c.mu.Lock(); c.back += d; c.mu.Unlock() }

// A Clock that jumps back between a grant and its finish (a Clock of the
// caller's, without Go's monotonic reading) gives a duration of zero, never
// a negative one, before and after the first stamp (its epoch).
func TestAClockThatJumpsBackNeverGivesANegativeCallDuration(t *testing.T) {
	clock := &jumpingClock{VirtualClock: testkit.NewVirtualClock(time.Unix(1e6, 0))}
	s := newSemaphore(t, "jumps", bulkhead.Config{MaxConcurrentCalls: 2}, bulkhead.WithClock(clock))
	d := recordDurations(t, s)
	require.True(t, s.TryAcquirePermission()) // the epoch
	first := s.StartCall()
	clock.Advance(time.Second)
	require.True(t, s.TryAcquirePermission())
	second := s.StartCall()
	clock.jumpBack(time.Hour) // before the epoch
	s.FinishCallStarted(second)
	s.FinishCallStarted(first)
	assert.Equal(t, []time.Duration{0, 0}, d.all())
}
