package testkit_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// queueCallers starts n goroutines that each wait for a permit of b with
// AcquirePermission and give it back once granted; the returned func waits
// for them.
func queueCallers(b *bulkhead.Semaphore, n int) (wait func()) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if b.AcquirePermission(context.Background()) == nil {
				b.FinishCall()
			}
		})
	}
	return wg.Wait
}

func TestAwaitQueuedWaitsForCallsQueuedByOtherGoroutines(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Time{})
	b, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: 5}, bulkhead.WithClock(clock))
	testkit.CheckPermits(t, b)
	b.TryAcquirePermission()
	wait := queueCallers(b, 3)

	testkit.AwaitQueued(t, b, 3)
	if q := b.Metrics().QueuedCalls; q != 3 {
		t.Fatalf("AwaitQueued returned with %d queued, want 3", q)
	}
	b.FinishCall() // each caller hands the permit on to the next
	wait()
}

func TestAwaitQueuedInABubbleWaitsForTheBubbleToBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: 5})
		testkit.CheckPermits(t, b)
		b.TryAcquirePermission()
		begin := time.Now()
		wait := queueCallers(b, 2)

		testkit.AwaitQueued(t, b, 2)
		if q := b.Metrics().QueuedCalls; q != 2 {
			t.Fatalf("AwaitQueued returned with %d queued, want 2", q)
		}
		if d := time.Since(begin); d != 0 {
			t.Errorf("AwaitQueued let %v of bubble time pass, want none", d)
		}
		b.FinishCall()
		wait()
	})
}

func TestAwaitQueuedInABubbleFailsAtOnceWhenTooFewQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: 5})
		b.TryAcquirePermission()
		wait := queueCallers(b, 1)
		begin := time.Now()
		f := runFake(func(tb *fakeTB) { testkit.AwaitQueued(tb, b, 2) })
		wantFailure(t, f, `bulkhead "walmart": 1 call(s) queued when every goroutine of the bubble was blocked, want 2`)
		if d := time.Since(begin); d != 0 {
			t.Errorf("the failure took %v of bubble time, want none", d)
		}
		b.FinishCall()
		wait()
	})
}

func TestAwaitQueuedOutsideABubbleFailsAfterItsBudget(t *testing.T) {
	defer testkit.SetAwaitQueuedBudget(time.Millisecond)()
	b, _ := bulkhead.New("carrefour", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: 5})
	testkit.CheckPermits(t, b)
	f := runFake(func(tb *fakeTB) { testkit.AwaitQueued(tb, b, 1) })
	wantFailure(t, f, `bulkhead "carrefour": 0 call(s) queued after 1ms, want 1`)
}

func TestAwaitQueuedPanicsOnBadArguments(t *testing.T) {
	b, _ := bulkhead.New("p", bulkhead.DefaultConfig())
	for name, call := range map[string]func(){
		"nil bulkhead":   func() { testkit.AwaitQueued(t, (*bulkhead.Semaphore)(nil), 1) },
		"negative count": func() { testkit.AwaitQueued(t, b, -1) },
	} {
		msg := panicOf(call)
		if !strings.Contains(msg, "testkit: AwaitQueued called with") {
			t.Errorf("%s: panic %q, want one naming AwaitQueued and the argument", name, msg)
		}
	}
}

// panicOf returns the panic value of f as text, or "" if f returns.
func panicOf(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}
