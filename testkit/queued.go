package testkit

import (
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

// AwaitQueued waits until b has at least n calls queued
// (Metrics().QueuedCalls >= n), so that a test can go on once the
// goroutines of the code under test (rxgo's, say) have asked for their
// permits: the moment to Advance a VirtualClock or to give a permit back.
// It fails the test with t.Fatalf, naming the bulkhead and both counts, if
// that does not happen:
//
//   - inside a testing/synctest bubble it calls synctest.Wait, once: when
//     every other goroutine of the bubble is durably blocked, the calls that
//     will queue without time passing have queued, so fewer than n is a
//     failure, reported at once and without advancing the bubble's clock;
//   - outside a bubble it polls Metrics, yielding with runtime.Gosched
//     between reads, for up to DefaultTimeout of real time, which is spent
//     only when the test fails.
//
// It panics if b is nil or n is negative.
func AwaitQueued(t testing.TB, b Metered, n int) {
	t.Helper()
	if isNil(b) {
		panic("testkit: AwaitQueued called with a nil bulkhead")
	}
	if n < 0 {
		panic("testkit: AwaitQueued called with a negative count")
	}
	if inBubble() { // synctest.Wait has run
		if q := b.Metrics().QueuedCalls; q < n {
			t.Fatalf("testkit: AwaitQueued: bulkhead %q: %d call(s) queued when every goroutine of the bubble was blocked, want %d", b.Name(), q, n)
		}
		return
	}
	deadline := time.Now().Add(awaitQueuedBudget)
	for {
		q := b.Metrics().QueuedCalls
		if q >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("testkit: AwaitQueued: bulkhead %q: %d call(s) queued after %v, want %d", b.Name(), q, awaitQueuedBudget, n)
		}
		runtime.Gosched()
	}
}

// awaitQueuedBudget is how long AwaitQueued polls outside a bubble; tests
// of the failure shorten it (export_test.go).
var awaitQueuedBudget = DefaultTimeout

// notInBubble is the panic value of synctest.Wait outside a bubble.
const notInBubble = "goroutine is not in a bubble"

// inBubble calls synctest.Wait and reports whether the calling goroutine is
// in a testing/synctest bubble: outside one, Wait panics with notInBubble,
// which inBubble recovers. Any other panic (Wait called by two goroutines
// of a bubble at once) is passed on.
func inBubble() (in bool) {
	defer func() {
		if !in {
			if r := recover(); r != nil && r != any(notInBubble) {
				panic(r)
			}
		}
	}()
	synctest.Wait()
	return true
}
