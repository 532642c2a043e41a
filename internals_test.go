package bulkhead_test

import (
	"runtime"
	"sync"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// countingClock is a real-time clock that counts armed, unfired timers. Its
// timers never fire within a test's duration (they are long).
type countingClock struct {
	mu     sync.Mutex
	timers map[*countingTimer]bool
}

type countingTimer struct {
	c *countingClock
	t *time.Timer
}

func (c *countingClock) Now() time.Time { return time.Now() }

func (c *countingClock) AfterFunc(d time.Duration, f func()) bulkhead.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timers == nil {
		c.timers = map[*countingTimer]bool{}
	}
	ct := &countingTimer{c: c}
	ct.t = time.AfterFunc(d, func() {
		c.mu.Lock()
		delete(c.timers, ct)
		c.mu.Unlock()
		f()
	})
	c.timers[ct] = true
	return ct
}

func (t *countingTimer) Stop() bool {
	t.c.mu.Lock()
	delete(t.c.timers, t)
	t.c.mu.Unlock()
	return t.t.Stop()
}

func (c *countingClock) armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

func stackDepth() int {
	pc := make([]uintptr, 4096)
	return runtime.Callers(0, pc)
}
