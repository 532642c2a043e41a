package bulkhead_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
)

func TestBlockingKeyedAcquireHoldsItsBulkheadUntilTheLeaseEnds(t *testing.T) {
	r, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1},
		bulkhead.WithIdleTimeout(time.Second))
	l, err := r.AcquirePermission(context.Background(), "k", bulkhead.CallOptions{})
	require.NoError(t, err)
	assert.Equal(t, "k", l.Name())
	clock.Advance(time.Hour)
	assert.Equal(t, []string{"k"}, names(r), "evicted while a blocking call holds its permit")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := r.AcquirePermission(ctx, "k", bulkhead.CallOptions{})
		done <- err
	}()
	require.Eventually(t, func() bool { return r.All()[0].Metrics().QueuedCalls == 1 }, time.Minute, time.Millisecond)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled, "a withdrawn wait returns the context's error")
	l.FinishCall()
	clock.Advance(2 * time.Second)
	assert.Empty(t, names(r), "a withdrawn wait must let go of its bulkhead")
}

func TestTryKeyedAcquireNeverQueues(t *testing.T) {
	r, _ := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1, QueueOrder: bulkhead.LIFO})
	l, err := r.TryAcquirePermission("k", bulkhead.CallOptions{})
	require.NoError(t, err)
	a, waiting := r.AcquirePermissionAsync("k", bulkhead.CallOptions{})
	require.ErrorIs(t, a.Err(), bulkhead.ErrPending)
	_, err = r.TryAcquirePermission("k", bulkhead.CallOptions{})
	var fe *bulkhead.FullError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, bulkhead.FullError{Name: "k", Reason: bulkhead.NoWait}, *fe)
	assert.ErrorIs(t, a.Err(), bulkhead.ErrPending, "a try must not evict the waiter of a LIFO queue")
	l.FinishCall()
	require.NoError(t, a.Err())
	waiting.FinishCall()
}

func TestBlockingAndTryKeyedAcquireRejectBadInput(t *testing.T) {
	r, _ := newKeyedRegistry(t, bulkhead.DefaultConfig())
	_, err := r.AcquirePermission(context.Background(), "", bulkhead.CallOptions{})
	assert.ErrorContains(t, err, "key must not be empty")
	_, err = r.TryAcquirePermission("k", bulkhead.CallOptions{ConfigName: "nope"})
	assert.ErrorContains(t, err, `"nope"`)
	_, err = r.AcquirePermission(context.Background(), "k", bulkhead.CallOptions{ConfigName: "nope"})
	assert.ErrorContains(t, err, `"nope"`)
	assert.False(t, errors.Is(err, bulkhead.ErrBulkheadFull))
	var noContext context.Context // nil: the point of the check
	assert.PanicsWithValue(t, "bulkhead: Registry.AcquirePermission called with a nil context", func() { _, _ = r.AcquirePermission(noContext, "k", bulkhead.CallOptions{}) })
}
