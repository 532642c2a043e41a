package bulkhead

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead/internal/semhook"
)

// observeSweeps sets the sweep hooks for the test and returns what they
// saw, batch by batch.
func observeSweeps(t *testing.T) func() (examined, expired []int) {
	var mu sync.Mutex
	var ex, exp []int
	t.Cleanup(semhook.Set(&semhook.Hooks{Unlock: func(b semhook.Batch) {
		mu.Lock()
		defer mu.Unlock()
		ex, exp = append(ex, b.Examined), append(exp, b.Rejected)
	}}))
	return func() ([]int, []int) {
		mu.Lock()
		defer mu.Unlock()
		a, b := ex, exp
		ex, exp = nil, nil
		return a, b
	}
}

func sum(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}

// After ChangeConfig shortens MaxWaitDuration, the waiters queued since
// expire before the older ones: each timer fire must look at the expired
// waiters and the head of each run of deadlines, not walk the queue
// (it walked all 10,000 old waiters per fire).
func TestSweepAfterShorterWaitLooksOnlyAtExpiredWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seen := observeSweeps(t)
		cfg := Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: Unbounded}
		s, err := New("runs", cfg)
		if err != nil {
			t.Fatal(err)
		}
		s.TryAcquirePermission()
		old := make([]*Acquisition, 10000)
		for i := range old {
			old[i] = s.AcquirePermissionAsync()
		}
		cfg.MaxWaitDuration = time.Second
		if err := s.ChangeConfig(cfg); err != nil {
			t.Fatal(err)
		}
		for round := range 5 {
			short := make([]*Acquisition, 10)
			for i := range short {
				short[i] = s.AcquirePermissionAsync()
			}
			time.Sleep(time.Second)
			synctest.Wait()
			for i, a := range short {
				if fe, ok := a.Err().(*FullError); !ok || fe.Reason != WaitTimeout {
					t.Fatalf("round %d: short waiter %d: %v, want WaitTimeout", round, i, a.Err())
				}
			}
			examined, expired := seen()
			if sum(expired) != 10 || sum(examined) > 10+3 {
				t.Fatalf("round %d: a fire looked at %v waiters to expire %v; want 10 expired, at most 13 looked at", round, examined, expired)
			}
		}
		for _, a := range old {
			if a.Err() != ErrPending {
				t.Fatalf("an old waiter was decided early: %v", a.Err())
			}
			a.Cancel()
		}
		s.FinishCall()
		if m := s.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			t.Fatalf("left: %+v", m)
		}
	})
}

// A sweep of many expired waiters rejects them in batches of semhook.DefaultBatch,
// releasing the lock in between, and still rejects every one of them.
func TestSweepOfManyWaitersRunsInBoundedBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seen := observeSweeps(t)
		s, err := New("batches", Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: Unbounded})
		if err != nil {
			t.Fatal(err)
		}
		s.TryAcquirePermission()
		const n = 3*semhook.DefaultBatch + 5
		all := make([]*Acquisition, n)
		for i := range all {
			all[i] = s.AcquirePermissionAsync()
		}
		time.Sleep(time.Second)
		synctest.Wait()
		_, expired := seen()
		if len(expired) != 4 || sum(expired) != n {
			t.Fatalf("batches expired %v, want 4 batches of at most %d, %d in all", expired, semhook.DefaultBatch, n)
		}
		for _, x := range expired {
			if x > semhook.DefaultBatch {
				t.Fatalf("a batch expired %d > %d", x, semhook.DefaultBatch)
			}
		}
		for i, a := range all {
			if fe, ok := a.Err().(*FullError); !ok || fe.Reason != WaitTimeout {
				t.Fatalf("waiter %d: %v, want WaitTimeout", i, a.Err())
			}
		}
		s.FinishCall()
		if m := s.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			t.Fatalf("left: %+v", m)
		}
	})
}
