package redis

import (
	"testing"
	"unsafe"
)

// A waiting call costs its Permit, its Acquisition and its share of the
// queue (BenchmarkQueuedWaiters: 239 B against a goal of 256 B, see
// docs/benchmarks.md). The Permit is the part this package owns; one more
// field moves it from the 96-byte size class to the 112-byte one, which
// put the figure at 255–258 B.
func TestAWaitingCallsPermitFitsThe96ByteSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(Permit{}); n > 96 {
		t.Errorf("Permit is %d bytes, over the 96-byte size class a waiting call's budget counts on", n)
	}
}
