//go:build unix

package bulkhead_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process has used so
// far: benchmarks report it per op next to wall time, because on a shared
// machine wall time also counts the time spent waiting for a core.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
