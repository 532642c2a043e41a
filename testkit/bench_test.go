package testkit_test

import (
	"testing"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// BenchmarkWaitTimeoutOnVirtualClock measures what a test of "the second
// call waits an hour, then is rejected" costs in real time.
func BenchmarkWaitTimeoutOnVirtualClock(b *testing.B) {
	for b.Loop() {
		clock := testkit.NewVirtualClock(time.Time{})
		bh, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(clock))
		bh.TryAcquirePermission()
		a := bh.AcquirePermissionAsync()
		clock.Advance(time.Hour)
		if a.Err() == nil {
			b.Fatal("granted")
		}
		bh.FinishCall()
	}
}

// BenchmarkAdvanceFiresTimers measures scheduling and firing one timer.
func BenchmarkAdvanceFiresTimers(b *testing.B) {
	clock := testkit.NewVirtualClock(time.Time{})
	f := func() {}
	for b.Loop() {
		clock.AfterFunc(time.Millisecond, f)
		clock.Advance(time.Millisecond)
	}
}
