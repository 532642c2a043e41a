//go:build !bulkheadlockhold || !linux

package lockhold

// On reports whether the measurement is compiled in.
const On = false

// Acquired is called right after the lock is taken.
func Acquired() {}

// Released is called right before the lock is released.
func Released() {}

// Max returns the longest hold seen since the last Reset, in nanoseconds.
func Max() int64 { return 0 }

// MaxCPU returns the longest hold in CPU time of the holding thread.
func MaxCPU() int64 { return 0 }

// Reset forgets the longest hold.
func Reset() {}
