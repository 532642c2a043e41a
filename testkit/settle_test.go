package testkit_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// releasingOnFirstRead is a bulkhead whose first Metrics call lets a
// goroutine of the bubble give the held permit back: when the leak check
// first reads, the permit is held and its release is on its way, the
// shape of a delivery still running when the test function returned.
type releasingOnFirstRead struct {
	*bulkhead.Semaphore
	reads   atomic.Int32
	release chan struct{}
}

func (r *releasingOnFirstRead) Metrics() bulkhead.Metrics {
	m := r.Semaphore.Metrics()
	if r.reads.Add(1) == 1 {
		close(r.release)
	}
	return m
}

func TestCheckPermitsInABubbleWaitsForAGoroutineOnItsWayToGiveThePermitBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bh := &releasingOnFirstRead{Semaphore: newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 1}), release: make(chan struct{})}
		f := runFake(func(tb *fakeTB) {
			testkit.CheckPermits(tb, bh)
			bh.TryAcquirePermission()
			go func() {
				<-bh.release
				bh.ReleasePermission()
			}()
		})
		wantPass(t, f)
		if got := bh.reads.Load(); got != 2 {
			t.Errorf("the check read the metrics %d times, want 2: held at the first reading, given back at the second", got)
		}
	})
}

func TestCheckPermitsOutsideABubbleReadsOnce(t *testing.T) {
	bh := &releasingOnFirstRead{Semaphore: newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 1}), release: make(chan struct{})}
	released := make(chan struct{})
	f := runFake(func(tb *fakeTB) {
		testkit.CheckPermits(tb, bh)
		bh.TryAcquirePermission()
		go func() {
			defer close(released)
			<-bh.release
			bh.ReleasePermission()
		}()
	})
	wantFailure(t, f, `bulkhead "walmart"`, "1 permit(s) held")
	<-released
	if got := bh.reads.Load(); got != 1 {
		t.Errorf("the check read the metrics %d times outside a bubble, want 1", got)
	}
}

func TestCheckPermitsInABubbleReportsAPermitHeldForGood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bh := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 1})
		stop := make(chan struct{})
		f := runFake(func(tb *fakeTB) {
			testkit.CheckPermits(tb, bh)
			bh.TryAcquirePermission()
			go func() { <-stop }() // a goroutine of the bubble, blocked for good
		})
		wantFailure(t, f, `bulkhead "walmart"`, "1 permit(s) held")
		close(stop)
		bh.ReleasePermission()
	})
}

func TestCheckBudgetInABubbleWaitsForAGoroutineOnItsWayToGiveThePermitBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newTestBudget(t)
		flow, _ := b.Flow("acme", bulkhead.PartnerOptions{})
		release := make(chan struct{})
		f := runFake(func(tb *fakeTB) {
			testkit.CheckBudget(tb, b)
			flow.AcquirePermissionAsync()
			go func() {
				<-release
				flow.FinishCall()
			}()
			tb.Cleanup(func() { close(release) }) // runs just before the check
		})
		wantPass(t, f)
	})
}
