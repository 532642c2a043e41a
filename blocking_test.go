package bulkhead_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
)

func TestFromBlockingGrantsAsync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "blocking", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
		b := bulkhead.FromBlocking(s)
		assert.Equal(t, "blocking", b.Name())
		first := b.AcquirePermissionAsync()
		<-first.Done()
		require.NoError(t, first.Err())

		second := b.AcquirePermissionAsync()
		synctest.Wait()
		require.ErrorIs(t, second.Err(), bulkhead.ErrPending)
		b.FinishCall()
		<-second.Done()
		require.NoError(t, second.Err())
		b.FinishCall()
	})
}

func TestFromBlockingCancelWithdrawsAndCancelsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "blocking", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
		require.True(t, s.TryAcquirePermission())
		b := bulkhead.FromBlocking(s)
		a := b.AcquirePermissionAsync()
		synctest.Wait()
		assert.Equal(t, 1, s.Metrics().QueuedCalls)
		require.True(t, a.Cancel())
		synctest.Wait() // the bridge goroutine sees ctx end and leaves
		require.ErrorIs(t, a.Err(), bulkhead.ErrCancelled)
		assert.Zero(t, s.Metrics().QueuedCalls)
		s.ReleasePermission()
	})
}

func TestFromBlockingPassesRejection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "blocking", bulkhead.Config{MaxConcurrentCalls: 1})
		require.True(t, s.TryAcquirePermission())
		a := bulkhead.FromBlocking(s).AcquirePermissionAsync()
		<-a.Done()
		require.ErrorIs(t, a.Err(), bulkhead.ErrBulkheadFull)
		s.ReleasePermission()
	})
}

// gate is a BlockingBulkhead whose AcquirePermission grants when told to,
// ignoring ctx, to force the grant-after-cancel path.
type gate struct {
	release  chan struct{}
	mu       sync.Mutex
	released int
}

func (g *gate) Name() string { return "gate" }
func (g *gate) AcquirePermission(context.Context) error {
	<-g.release
	return nil
}
func (g *gate) ReleasePermission() { g.mu.Lock(); g.released++; g.mu.Unlock() }
func (g *gate) FinishCall()        { panic("not used") }

func TestFromBlockingGivesBackGrantThatLostToCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &gate{release: make(chan struct{})}
		a := bulkhead.FromBlocking(g).AcquirePermissionAsync()
		require.True(t, a.Cancel())
		close(g.release)
		synctest.Wait()
		g.mu.Lock()
		defer g.mu.Unlock()
		assert.Equal(t, 1, g.released)
		require.ErrorIs(t, a.Err(), bulkhead.ErrCancelled)
	})
}

func TestFromBlockingRejectsNil(t *testing.T) {
	assert.PanicsWithValue(t, "bulkhead: FromBlocking called with a nil BlockingBulkhead", func() { bulkhead.FromBlocking(nil) })
}
