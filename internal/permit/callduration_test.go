package permit

import (
	"sync"
	"testing"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// manualClock is a Clock that moves only with Advance and never fires a
// timer (testkit imports this package through flowable).
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
func (c *manualClock) AfterFunc(time.Duration, func()) bulkhead.Timer { return stopped{} }

type stopped struct{}

func (stopped) Stop() bool { return true }

// finishedDurations returns the CallDuration of every CallFinished of s.
func finishedDurations(s *bulkhead.Semaphore) func() []time.Duration {
	ch := make(chan time.Duration, 16)
	s.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallFinished {
			ch <- e.CallDuration
		}
	})
	return func() []time.Duration {
		var out []time.Duration
		for {
			select {
			case d := <-ch:
				out = append(out, d)
			default:
				return out
			}
		}
	}
}

func TestGuardReportsTheDurationOfTheCallItHolds(t *testing.T) {
	clock := &manualClock{now: time.Unix(0, 0)}
	s, err := bulkhead.New("timed", bulkhead.Config{MaxConcurrentCalls: 3}, bulkhead.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	got := finishedDurations(s)
	for _, end := range []func(*Guard){
		func(g *Guard) { g.Complete() },
		func(g *Guard) { g.MarkRan(); g.Release() },
	} {
		if !s.TryAcquirePermission() {
			t.Fatal("no permit")
		}
		g := NewGuard(s)
		clock.Advance(12 * time.Millisecond)
		end(g)
	}
	if d := got(); len(d) != 2 || d[0] != 12*time.Millisecond || d[1] != 12*time.Millisecond {
		t.Fatalf("CallDurations %v, want [12ms 12ms]", d)
	}
}

func TestGatedCallQueuedForItsPermitStartsAtItsGrant(t *testing.T) {
	clock := &manualClock{now: time.Unix(0, 0)}
	s, err := bulkhead.New("timed", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: 1}, bulkhead.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	got := finishedDurations(s)
	if !s.TryAcquirePermission() {
		t.Fatal("no permit")
	}
	h := newHandler()
	g := &gate{}
	g.start(s, h)
	clock.Advance(time.Second) // the wait is not part of the call
	s.FinishCall()
	if h.guard.Load() == nil {
		t.Fatal("not granted")
	}
	clock.Advance(5 * time.Millisecond)
	h.guard.Load().Complete()
	if d := got(); len(d) != 2 || d[0] != 0 || d[1] != 5*time.Millisecond {
		t.Fatalf("CallDurations %v, want [0 5ms]", d)
	}
}

// untimed is a Bulkhead that is not a CallTimer.
type untimed struct{ bulkhead.Bulkhead }

func TestGuardOverABulkheadWithoutTimerFinishesPlainly(t *testing.T) {
	s := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1})
	events := recordEvents(s)
	s.TryAcquirePermission()
	g := NewGuard(untimed{s})
	g.Complete()
	if got := count(events(), bulkhead.CallFinished); got != 1 {
		t.Fatalf("CallFinished events = %d, want 1", got)
	}
}
