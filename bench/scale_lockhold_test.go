//go:build bulkheadlockhold

package bench_test

import "github.com/rxbulkhead/bulkhead/internal/lockhold"

const lockHoldOn = lockhold.On

func resetLockHold()        { lockhold.Reset() }
func maxLockHold() int64    { return lockhold.Max() }
func maxLockHoldCPU() int64 { return lockhold.MaxCPU() }
