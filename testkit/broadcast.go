package testkit

import (
	"sync"
	"time"
)

// broadcast wakes the goroutines waiting for a change of some state guarded
// by mu. The channel is created only when someone waits, so signalling costs
// nothing when nobody does.
type broadcast struct {
	ch chan struct{} // guarded by the owner's mutex
}

// waitChan returns a channel that is closed at the next notify. Call with
// the owner's mutex held.
func (b *broadcast) waitChan() <-chan struct{} {
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

// notify wakes every waiter. Call with the owner's mutex held.
func (b *broadcast) notify() {
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}

// waitUntil blocks until cond (evaluated with mu held) is true, or timeout
// passes on the time package's clock (virtual inside a testing/synctest
// bubble). It reports whether cond became true.
func waitUntil(mu *sync.Mutex, b *broadcast, timeout time.Duration, cond func() bool) bool {
	var timer *time.Timer
	for {
		mu.Lock()
		if cond() {
			mu.Unlock()
			return true
		}
		ch := b.waitChan()
		mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(timeout)
			defer timer.Stop()
		}
		select {
		case <-ch:
		case <-timer.C:
			mu.Lock()
			ok := cond()
			mu.Unlock()
			return ok
		}
	}
}
