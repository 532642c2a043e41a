//go:build !bulkheadlockhold

package bench_test

// Without the tag bulkheadlockhold the lock hold is not measured (the
// binary built from an older core, which has no internal/lockhold, too).
const lockHoldOn = false

func resetLockHold()        {}
func maxLockHold() int64    { return 0 }
func maxLockHoldCPU() int64 { return 0 }
