package peer

import (
	"context"
	"testing"
	"time"
)

// A release token left by a Release whose holder has not taken it yet may
// be taken by the holding task of a later TryAcquire, which then finishes at
// once. That TryAcquire took a worker, so it must report the permit as
// granted: its caller's Release sends the token the other holder now waits
// for. Reporting false leaked one permit for good (the hammer's "permit 3
// did not come back").
func TestCorePoolTryAcquireWhoseTaskTookAPendingTokenIsGranted(t *testing.T) {
	const rounds = 2000
	const timeout = 10 * time.Second // only reached when the test fails
	c := NewCorePool(1)
	defer c.Close()
	waitFor := func(i int, what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %s", i, what)
			}
			time.Sleep(10 * time.Microsecond)
		}
	}
	for i := range rounds {
		// The worker is idle (it goes back to idle on its own goroutine).
		waitFor(i, "the worker did not go idle", func() bool { return c.p.Metrics().ActiveWorkers == 0 })
		// Stands for a Release whose holding task has not received its
		// token yet: the channel holds a token no task has taken.
		c.release <- struct{}{}
		granted := c.TryAcquire()
		// Wait until the token is taken: TryAcquire's task took the only
		// worker (a queued task would have been withdrawn), so it is the
		// one that takes it.
		waitFor(i, "the pending token was not taken", func() bool { return len(c.release) == 0 })
		if !granted {
			t.Fatalf("round %d: TryAcquire = false, but its task took a worker and the pending token", i)
		}
		c.Release() // the token the other holder waits for; no one takes it here
		<-c.release
		// The single permit is free again.
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := c.Acquire(ctx)
		cancel()
		if err != nil {
			t.Fatalf("round %d: the permit did not come back: %v", i, err)
		}
		c.Release()
	}
}
