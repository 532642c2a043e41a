package bench_test

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// BenchmarkReleaseChain is the release chain of issue 26: b.N calls wait
// on one permit, and each one's continuation gives the permit back, which
// grants the next: rxbulkhead's OnDone callbacks calling FinishCall, and
// x/sync's goroutines blocked in Acquire calling Release when they wake.
// One op is one grant. Besides wall time it reports cpu-ns/op, the
// process's CPU time (user + system, getrusage) over the timed part with
// the garbage collector off: on this shared machine a wall time counts the
// time the threads wait for a CPU, which drifts with everybody's load, and
// with GOMAXPROCS 1 the CPU time is the chain's own cost (with more Ps it
// also counts idle Ps looking for work). created/op is the goroutines the
// runtime started during the chain.
func BenchmarkReleaseChain(b *testing.B) {
	b.Run("rxbulkhead", func(b *testing.B) {
		s, err := bulkhead.New("chain", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: bulkhead.NoTimeout, MaxQueuedCalls: bulkhead.Unbounded})
		if err != nil {
			b.Fatal(err)
		}
		if !s.TryAcquirePermission() {
			b.Fatal("permit not free")
		}
		var done sync.WaitGroup
		done.Add(b.N)
		for range b.N {
			s.AcquirePermissionAsync().OnDone(func(error) {
				s.FinishCall() // grants the next waiter, inside this callback
				done.Done()
			})
		}
		timeChain(b, func() {
			s.FinishCall()
			done.Wait()
		})
	})
	b.Run("xsync", func(b *testing.B) {
		sem := semaphore.NewWeighted(1)
		_ = sem.Acquire(context.Background(), 1)
		var done sync.WaitGroup
		done.Add(b.N)
		xsWaiters(b.N, sem, func(int) context.Context { return context.Background() }, func(int, error) {
			sem.Release(1)
			done.Done()
		})
		timeChain(b, func() {
			sem.Release(1)
			done.Wait()
		})
	})
}

// timeChain times run with the garbage collector off and reports
// cpu-ns/op and created/op next to ns/op.
func timeChain(b *testing.B, run func()) {
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	created0 := goroutinesCreated()
	cpu0 := processCPU()
	b.ResetTimer()
	run()
	b.StopTimer()
	cpu := processCPU() - cpu0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(goroutinesCreated()-created0)/float64(b.N), "created/op")
}

// processCPU returns the user and system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
