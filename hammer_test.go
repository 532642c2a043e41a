package bulkhead_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
)

// TestHammer runs many goroutines doing a random mix of every operation and
// checks that held permits never exceed the limit in force, and that every
// permit comes back.
func TestHammer(t *testing.T) {
	// Inside a bubble the wait timeouts and ctx deadlines run on fake time.
	synctest.Test(t, hammer)
}

func hammer(t *testing.T) {
	const (
		workers = 16
		ops     = 2000
		maxCap  = 4
	)
	s := newSemaphore(t, "hammer", bulkhead.Config{MaxConcurrentCalls: maxCap, MaxWaitDuration: time.Millisecond, MaxQueuedCalls: 8})
	var held atomic.Int64 // permits held by workers, by our own count
	var violations atomic.Int64
	take := func() {
		// The limit can shrink to 1 at any time; held may then exceed the
		// new limit until calls finish, but never the largest limit used.
		if n := held.Add(1); n > maxCap {
			violations.Add(1)
		}
	}
	give := func(finished bool) {
		held.Add(-1)
		if finished {
			s.FinishCall()
		} else {
			s.ReleasePermission()
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for range ops {
				switch rng.IntN(6) {
				case 0:
					if s.TryAcquirePermission() {
						take()
						give(true)
					}
				case 1:
					a := s.AcquirePermissionAsync()
					if rng.IntN(2) == 0 && a.Cancel() {
						continue
					}
					<-a.Done()
					if a.Err() == nil {
						take()
						give(rng.IntN(2) == 0)
					}
				case 2:
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(500))*time.Microsecond)
					if s.AcquirePermission(ctx) == nil {
						take()
						give(true)
					}
					cancel()
				case 3:
					a := s.AcquirePermissionAsync()
					done := make(chan struct{})
					a.OnDone(func(err error) {
						if err == nil {
							take()
							give(true) // release inside the callback
						}
						close(done)
					})
					<-done
				case 4:
					cfg := bulkhead.Config{MaxConcurrentCalls: 1 + rng.IntN(maxCap), MaxWaitDuration: time.Duration(rng.IntN(2000)) * time.Microsecond, MaxQueuedCalls: 1 + rng.IntN(10)}
					if rng.IntN(3) == 0 {
						cfg.QueueOrder = bulkhead.LIFO
					}
					require.NoError(t, s.ChangeConfig(cfg))
				case 5:
					m := s.Metrics()
					if m.QueuedCalls < 0 || m.InFlightCalls > maxCap || m.AvailableConcurrentCalls > m.MaxAllowedConcurrentCalls ||
						m.QueuedCalls >= workers {
						t.Logf("violation: %+v", m)
						violations.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	require.Zero(t, violations.Load())
	require.Zero(t, held.Load())
	m := s.Metrics()
	require.Equal(t, m.MaxAllowedConcurrentCalls, m.AvailableConcurrentCalls, "all permits back")
	require.Zero(t, m.QueuedCalls)
}
