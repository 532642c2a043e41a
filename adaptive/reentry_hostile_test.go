package adaptive_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// sequence is an Algorithm that returns its values in turn, then the last.
type sequence struct{ next []float64 }

func (s *sequence) Update(limit float64, _ adaptive.Sample) float64 {
	v := s.next[0]
	if len(s.next) > 1 {
		s.next = s.next[1:]
	}
	return v
}

// Bulkhead invariants: "callbacks that the Semaphore runs (grants delivered
// by FinishCall or ChangeConfig) ... may re-enter the Bulkhead", and "the
// newest limit wins: ... a ChangeConfig that re-enters (through a grant
// callback) ... never leaves an older limit in force". The first queued
// call keeps its permit; the others finish inside their grant callbacks,
// granted by the ChangeConfig that applies a raised limit and by each
// other's FinishCall, and each finish is a window (PerCall) that asks for
// another limit while the first ChangeConfig is still running.
//
// The ChangeConfig runs the callbacks of its second and later grants on
// fresh goroutines (see Acquisition.OnDone): the bubble's Wait waits for
// them.
func TestHostileGrantCallbacksThatFinishAtOnceLeaveTheNewestLimitInForce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		alg := &sequence{next: []float64{4, 6, 2, 7, 3, 5}}
		b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxQueuedCalls: bulkhead.Unbounded, MaxWaitDuration: bulkhead.NoTimeout},
			adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, MaxCutPerSecond: 1, Window: adaptive.Window{PerCall: true}})
		holder, ok := b.TryAcquire()
		require.True(t, ok)
		var granted, finished atomic.Int32
		for range 8 {
			a := b.AcquirePermissionAsync()
			require.ErrorIs(t, a.Err(), bulkhead.ErrPending)
			a.OnDone(func(err error) {
				assert.NoError(t, err)
				if granted.Add(1) == 1 {
					return // keeps its permit: the others need the raised limit
				}
				finished.Add(1)
				b.FinishCall() // re-enters: a window, a new desired limit
			})
		}
		clock.Advance(10 * ms)
		holder.Finish(nil) // window: 4; its permit goes to the first queued call
		synctest.Wait()
		assert.Equal(t, int32(8), granted.Load(), "every queued call was granted")
		assert.Equal(t, int32(7), finished.Load())
		st := b.Stats()
		assert.Equal(t, 1, st.InFlight)
		assert.Equal(t, int64(8), st.Windows)
		assert.Equal(t, 5, st.Limit, "the last estimate")
		assert.Equal(t, st.Limit, b.Semaphore().Config().MaxConcurrentCalls, "the newest limit is in force")
		b.FinishCall()
		assert.Equal(t, 5, b.Semaphore().Config().MaxConcurrentCalls)
	})
}

// AcquirePermissionAsync: "a Cancel of the proxy that returns true leaves
// no permit to its caller", and a cancelled acquisition is no rejection.
// Acquire: "blocks until a permit is granted, the call is rejected ... or
// ctx ends (ctx.Err())".
func TestHostileQueuedCallsWithdrawnHoldNoPermitAndAreNoRejection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 1, MaxQueuedCalls: bulkhead.Unbounded, MaxWaitDuration: time.Minute})
		require.NoError(t, err)
		b, err := adaptive.New(sem, adaptive.Config{})
		require.NoError(t, err)
		testkit.CheckPermits(t, sem)
		holder, ok := b.TryAcquire()
		require.True(t, ok)

		proxy := b.AcquirePermissionAsync()
		require.ErrorIs(t, proxy.Err(), bulkhead.ErrPending)
		ctx, cancel := context.WithCancel(t.Context())
		acquired := make(chan error, 1)
		go func() {
			c, err := b.Acquire(ctx)
			if err == nil {
				c.Release()
			}
			acquired <- err
		}()
		synctest.Wait() // the goroutine waits in the queue
		assert.Equal(t, 2, sem.Metrics().QueuedCalls)

		assert.True(t, proxy.Cancel(), "the proxy was still queued")
		cancel()
		synctest.Wait()
		assert.ErrorIs(t, <-acquired, context.Canceled)
		assert.ErrorIs(t, proxy.Err(), bulkhead.ErrCancelled)
		m := sem.Metrics()
		assert.Equal(t, 0, m.QueuedCalls)
		assert.Equal(t, 1, m.InFlightCalls, "the holder's only")
		st := b.Stats()
		assert.Equal(t, 1, st.InFlight)
		assert.Equal(t, int64(0), st.Rejected, "a withdrawal is no rejection")

		holder.Finish(nil)
		assert.Equal(t, 0, sem.Metrics().InFlightCalls)
		assert.Equal(t, 0, b.Stats().InFlight)
	})
}
