package bulkhead

import (
	"bytes"
	"runtime"
	"testing"
	"time"
)

// blockedOnMutexIn waits until a goroutine whose stack holds fn is blocked
// locking a sync.Mutex, and fails the test if none is within 10 s.
func blockedOnMutexIn(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); runtime.Gosched() {
		for _, g := range bytes.Split(buf[:runtime.Stack(buf, true)], []byte("\n\n")) {
			if bytes.Contains(g, []byte("[sync.Mutex.Lock")) && bytes.Contains(g, []byte(fn)) {
				return
			}
		}
	}
	t.Fatalf("no goroutine in %s blocked on a mutex within 10s", fn)
}

// Cancel takes its decision under the Semaphore's lock, like a grant or an
// expiry, so that a waiter stays pending, and queued, until the moment it
// is withdrawn. Cancel used to decide first (its CAS) and take the lock
// after: in between, the waiter was withdrawn for a second Cancel (false)
// and for Err, yet still queued for Metrics and the queue bound, which
// the linearizability check caught (a Metrics read counting a waiter that
// another client's Cancel had already found withdrawn).
func TestCancelDecidesUnderTheLockSoAWithdrawnWaiterIsNeverStillQueued(t *testing.T) {
	s, err := New("cancel-lock", Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !s.TryAcquirePermission() {
		t.Fatal("permit not free")
	}
	a := s.AcquirePermissionAsync()
	s.lock() // as a grant, a sweep or Metrics would hold it
	cancelled := make(chan bool)
	go func() { cancelled <- a.Cancel() }()
	blockedOnMutexIn(t, "(*Acquisition).Cancel")
	state, queued := a.cell.Load()&outcomeMask, s.wait.queued
	s.unlock()
	if state != statePending {
		t.Errorf("while Cancel waits for the lock the waiter is already decided (state %d) yet still queued (%d)", state, queued)
	}
	if !<-cancelled {
		t.Fatal("Cancel lost, with nothing to lose to")
	}
	if m := s.Metrics(); m.QueuedCalls != 0 {
		t.Fatalf("a withdrawn waiter is still queued: %+v", m)
	}
	s.FinishCall()
}
