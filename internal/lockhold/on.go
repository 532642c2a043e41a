//go:build bulkheadlockhold && linux

package lockhold

import (
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// On reports whether the measurement is compiled in.
const On = true

var (
	epoch = time.Now()
	// sinceWall and sinceCPU are written by the lock's holder only (the
	// lock orders the writes); the maxima are read by anyone.
	sinceWall, sinceCPU int64
	tid                 uintptr // the thread that took the lock
	longestWall         atomic.Int64
	longestCPU          atomic.Int64
)

// threadCPU returns the CPU time of the calling thread (Linux
// CLOCK_THREAD_CPUTIME_ID): unlike the wall clock, it does not count the
// time the thread was descheduled while it held the lock.
func threadCPU() int64 {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// Acquired is called right after the lock is taken.
func Acquired() {
	sinceWall = int64(time.Since(epoch))
	tid, _, _ = syscall.RawSyscall(syscall.SYS_GETTID, 0, 0, 0)
	sinceCPU = threadCPU()
}

// Released is called right before the lock is released.
func Released() {
	raise(&longestWall, int64(time.Since(epoch))-sinceWall)
	cpu := threadCPU()
	if t, _, _ := syscall.RawSyscall(syscall.SYS_GETTID, 0, 0, 0); t == tid {
		raise(&longestCPU, cpu-sinceCPU)
	} // else the goroutine moved to another thread mid-hold: no CPU figure

}

func raise(m *atomic.Int64, d int64) {
	for {
		v := m.Load()
		if d <= v || m.CompareAndSwap(v, d) {
			return
		}
	}
}

// Max returns the longest hold seen since the last Reset, in nanoseconds of
// wall time (including any time the holding thread was descheduled).
func Max() int64 { return longestWall.Load() }

// MaxCPU returns the longest hold since the last Reset in nanoseconds of
// the holding thread's CPU time. A hold during which the Go scheduler moved
// the goroutine to another thread has no CPU figure and is left out.
func MaxCPU() int64 { return longestCPU.Load() }

// Reset forgets the longest holds.
func Reset() {
	longestWall.Store(0)
	longestCPU.Store(0)
}
