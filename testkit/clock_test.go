package testkit_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestAdvanceFiresDueTimersInDeadlineOrder(t *testing.T) {
	c := testkit.NewVirtualClock(start)
	var got []string
	c.AfterFunc(30*time.Millisecond, func() { got = append(got, "30ms") })
	c.AfterFunc(10*time.Millisecond, func() { got = append(got, "10ms") })
	c.AfterFunc(20*time.Millisecond, func() { got = append(got, "20ms") })
	c.AfterFunc(40*time.Millisecond, func() { got = append(got, "40ms") })

	c.Advance(30 * time.Millisecond)

	if want := []string{"10ms", "20ms", "30ms"}; !slices.Equal(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if n := c.PendingTimers(); n != 1 {
		t.Fatalf("PendingTimers() = %d, want 1 (the 40ms timer)", n)
	}
	if now := c.Now(); !now.Equal(start.Add(30 * time.Millisecond)) {
		t.Fatalf("Now() = %v, want start+30ms", now)
	}
}

func TestTimersWithEqualDeadlinesFireInSchedulingOrder(t *testing.T) {
	c := testkit.NewVirtualClock(start)
	var got []int
	for i := range 20 {
		c.AfterFunc(time.Second, func() { got = append(got, i) })
	}
	c.Advance(time.Second)
	for i, v := range got {
		if v != i {
			t.Fatalf("fired %v, want 0..19 in scheduling order", got)
		}
	}
	if len(got) != 20 {
		t.Fatalf("fired %d timers, want 20", len(got))
	}
}

func TestTimerScheduledByFiringTimerFiresInSameAdvanceWhenDue(t *testing.T) {
	c := testkit.NewVirtualClock(start)
	var got []string
	c.AfterFunc(10*time.Millisecond, func() {
		got = append(got, "outer@"+c.Since(start).String())
		c.AfterFunc(5*time.Millisecond, func() { got = append(got, "inner@"+c.Since(start).String()) })
		c.AfterFunc(0, func() { got = append(got, "now@"+c.Since(start).String()) })
		c.AfterFunc(50*time.Millisecond, func() { got = append(got, "late@"+c.Since(start).String()) })
	})
	c.AfterFunc(12*time.Millisecond, func() { got = append(got, "other@"+c.Since(start).String()) })

	c.Advance(20 * time.Millisecond)

	want := []string{"outer@10ms", "now@10ms", "other@12ms", "inner@15ms"}
	if !slices.Equal(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if n := c.PendingTimers(); n != 1 {
		t.Fatalf("PendingTimers() = %d, want 1 (the timer due at 60ms)", n)
	}
	c.Advance(40 * time.Millisecond)
	if last := got[len(got)-1]; last != "late@60ms" {
		t.Fatalf("last fired %q, want late@60ms", last)
	}
}

func TestAfterFuncNeverRunsBeforeItReturns(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		t.Run(d.String(), func(t *testing.T) {
			c := testkit.NewVirtualClock(start)
			returned := false
			ran := false
			c.AfterFunc(d, func() {
				if !returned {
					t.Error("f ran before AfterFunc returned")
				}
				ran = true
			})
			returned = true
			if ran {
				t.Fatal("f ran without an Advance")
			}
			c.Advance(0)
			if !ran {
				t.Fatal("a timer due at once did not fire at Advance(0)")
			}
			if !c.Now().Equal(start) {
				t.Fatalf("Now() = %v after Advance(0), want start", c.Now())
			}
		})
	}
}

func TestNowDuringFiringIsTheTimersDeadline(t *testing.T) {
	c := testkit.NewVirtualClock(start)
	var seen []time.Duration
	for _, d := range []time.Duration{3 * time.Second, time.Second} {
		c.AfterFunc(d, func() { seen = append(seen, c.Since(start)) })
	}
	c.Advance(time.Hour)
	if want := []time.Duration{time.Second, 3 * time.Second}; !slices.Equal(seen, want) {
		t.Fatalf("Now during firing = %v, want %v", seen, want)
	}
	if got := c.Since(start); got != time.Hour {
		t.Fatalf("Now after Advance = start+%v, want start+1h", got)
	}
}

func TestStopPreventsFiringAndReportsWhetherItDid(t *testing.T) {
	c := testkit.NewVirtualClock(start)
	fired := false
	tm := c.AfterFunc(time.Second, func() { fired = true })
	if !tm.Stop() {
		t.Fatal("first Stop of a pending timer = false, want true")
	}
	if tm.Stop() {
		t.Fatal("second Stop = true, want false")
	}
	if n := c.PendingTimers(); n != 0 {
		t.Fatalf("PendingTimers() = %d after Stop, want 0", n)
	}
	c.Advance(time.Hour)
	if fired {
		t.Fatal("a stopped timer fired")
	}

	done := c.AfterFunc(time.Second, func() {})
	c.Advance(time.Second)
	if done.Stop() {
		t.Fatal("Stop of a fired timer = true, want false")
	}
}

func TestTimerFuncMayStopAnotherDueTimer(t *testing.T) {
	c := testkit.NewVirtualClock(start)
	var second bulkhead.Timer
	stopped := false
	secondFired := false
	c.AfterFunc(time.Second, func() { stopped = second.Stop() })
	second = c.AfterFunc(time.Second, func() { secondFired = true })
	c.Advance(time.Second)
	if !stopped || secondFired {
		t.Fatalf("Stop from a firing timer: stopped=%v, second fired=%v; want true, false", stopped, secondFired)
	}
}

func TestTimerFuncMayCallEveryClockMethod(t *testing.T) {
	// A timer func that re-enters the clock would deadlock if the clock held
	// its lock while calling it.
	c := testkit.NewVirtualClock(start)
	var inner atomic.Bool
	var self bulkhead.Timer
	self = c.AfterFunc(time.Second, func() {
		_ = c.Now()
		_ = c.PendingTimers()
		_, _ = c.NextDeadline()
		if self.Stop() {
			t.Error("Stop of the timer that is firing = true, want false")
		}
		c.AfterFunc(0, func() { inner.Store(true) })
		c.Advance(0)
	})
	c.Advance(time.Second)
	if !inner.Load() {
		t.Fatal("the timer scheduled and advanced from a timer func did not fire")
	}
}

func TestAdvanceRefusesToGoBack(t *testing.T) {
	c := testkit.NewVirtualClock(start)
	c.Advance(time.Second)
	for name, f := range map[string]func(){
		"Advance(-1ns)":     func() { c.Advance(-1) },
		"AdvanceTo(before)": func() { c.AdvanceTo(start) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if msg := fmt.Sprint(r); r == nil || !strings.Contains(msg, "cannot go back") {
					t.Fatalf("recovered %v, want a panic saying time cannot go back", r)
				}
			}()
			f()
		})
	}
}

func TestAdvanceToFiresDueTimersAndSetsNow(t *testing.T) {
	c := testkit.NewVirtualClock(start)
	fired := 0
	c.AfterFunc(time.Minute, func() { fired++ })
	c.AfterFunc(2*time.Minute, func() { fired++ })
	c.AdvanceTo(start.Add(90 * time.Second))
	if fired != 1 || !c.Now().Equal(start.Add(90*time.Second)) {
		t.Fatalf("fired %d, Now = start+%v; want 1 and start+1m30s", fired, c.Since(start))
	}
	c.AdvanceTo(c.Now()) // same instant is allowed
	if d, ok := c.NextDeadline(); !ok || !d.Equal(start.Add(2*time.Minute)) {
		t.Fatalf("NextDeadline() = %v, %v; want start+2m, true", d, ok)
	}
}

func TestZeroValueClockIsUsable(t *testing.T) {
	var c testkit.VirtualClock
	fired := false
	c.AfterFunc(time.Millisecond, func() { fired = true })
	c.Advance(time.Millisecond)
	if !fired || c.Now() != (time.Time{}).Add(time.Millisecond) {
		t.Fatalf("zero clock: fired=%v Now=%v", fired, c.Now())
	}
	if _, ok := c.NextDeadline(); ok {
		t.Fatal("NextDeadline() reports a timer on an idle clock")
	}
}

func TestAfterFuncPanicsOnNilFunc(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "nil func") {
			t.Fatalf("recovered %v, want a panic about a nil func", r)
		}
	}()
	testkit.NewVirtualClock(start).AfterFunc(time.Second, nil)
}

// TestConcurrentUseFiresEachTimerExactlyOnce hammers the clock from many
// goroutines: every timer either fires exactly once or is stopped, never
// both, and Now never goes back.
func TestConcurrentUseFiresEachTimerExactlyOnce(t *testing.T) {
	const workers, perWorker = 8, 500
	c := testkit.NewVirtualClock(start)
	var fired, stopped, scheduled atomic.Int64
	counts := make([]atomic.Int32, workers*perWorker)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			last := c.Now()
			for i := range perWorker {
				id := w*perWorker + i
				tm := c.AfterFunc(time.Duration(i%7)*time.Millisecond, func() {
					counts[id].Add(1)
					fired.Add(1)
				})
				scheduled.Add(1)
				switch i % 3 {
				case 0:
					if tm.Stop() {
						stopped.Add(1)
					}
				case 1:
					c.Advance(time.Duration(i%3) * time.Millisecond)
				}
				if now := c.Now(); now.Before(last) {
					t.Errorf("Now went back from %v to %v", last, now)
				} else {
					last = now
				}
			}
		})
	}
	wg.Wait()
	c.Advance(time.Hour)
	if got := fired.Load() + stopped.Load(); got != scheduled.Load() {
		t.Fatalf("fired %d + stopped %d = %d, want %d scheduled", fired.Load(), stopped.Load(), got, scheduled.Load())
	}
	for id := range counts {
		if n := counts[id].Load(); n > 1 {
			t.Fatalf("timer %d fired %d times", id, n)
		}
	}
	if n := c.PendingTimers(); n != 0 {
		t.Fatalf("PendingTimers() = %d at the end, want 0", n)
	}
}

func TestSemaphoreWaitTimeoutRunsOnVirtualClock(t *testing.T) {
	c := testkit.NewVirtualClock(start)
	bh, err := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(c))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, bh)
	if !bh.TryAcquirePermission() {
		t.Fatal("first permit not granted")
	}
	defer bh.FinishCall()
	a := bh.AcquirePermissionAsync()

	c.Advance(49 * time.Millisecond)
	if err := a.Err(); !errors.Is(err, bulkhead.ErrPending) {
		t.Fatalf("after 49ms: Err() = %v, want still pending", err)
	}
	c.Advance(time.Millisecond)
	var fe *bulkhead.FullError
	if err := a.Err(); !errors.As(err, &fe) || fe.Reason != bulkhead.WaitTimeout {
		t.Fatalf("after 50ms: Err() = %v, want a WaitTimeout *FullError", err)
	}
	if n := c.PendingTimers(); n != 0 {
		t.Fatalf("PendingTimers() = %d after the only waiter expired, want 0", n)
	}
}

func TestAwaitTimersWaitsForATimerScheduledOnAnotherGoroutine(t *testing.T) {
	c := testkit.NewVirtualClock(start)
	fired := make(chan struct{})
	go c.AfterFunc(time.Second, func() { close(fired) })
	if !c.AwaitTimers(1, time.Minute) {
		t.Fatal("AwaitTimers(1) = false though a timer was scheduled")
	}
	c.Advance(time.Second)
	select {
	case <-fired:
	default:
		t.Fatal("the awaited timer did not fire at Advance")
	}
}

func TestAwaitTimersGivesUpAfterTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testkit.NewVirtualClock(start)
		c.AfterFunc(time.Second, func() {})
		begin := time.Now()
		if c.AwaitTimers(2, 3*time.Second) {
			t.Fatal("AwaitTimers(2) = true with one timer pending")
		}
		if d := time.Since(begin); d != 3*time.Second {
			t.Fatalf("gave up after %v of bubble time, want 3s", d)
		}
		if !c.AwaitTimers(1, time.Second) {
			t.Fatal("AwaitTimers(1) = false with one timer pending")
		}
	})
}
