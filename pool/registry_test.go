package pool_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestPoolRegistryReturnsSamePoolPerName(t *testing.T) {
	r, err := pool.NewRegistry(pool.Config{MaxWorkers: 3})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close(context.Background())) })
	a, err := r.Get("soap")
	require.NoError(t, err)
	b, err := r.Get("soap")
	require.NoError(t, err)
	assert.Same(t, a, b)
	assert.Equal(t, 3, a.Config().MaxWorkers)
	found, ok := r.Find("soap")
	assert.True(t, ok)
	assert.Same(t, a, found)
	_, ok = r.Find("sftp")
	assert.False(t, ok)
}

func TestPoolRegistryNamedConfigs(t *testing.T) {
	big := pool.Config{MaxWorkers: 50, CoreWorkers: 10, QueueCapacity: 500, KeepAlive: time.Second, MaxQueueWait: bulkhead.NoTimeout}
	r, err := pool.NewRegistry(pool.DefaultConfig(), pool.WithConfig("big", big))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close(context.Background())) })
	p, err := r.GetWithConfig("sftp", "big")
	require.NoError(t, err)
	assert.Equal(t, big, p.Config())

	_, err = r.GetWithConfig("as2", "huge")
	require.EqualError(t, err, `bulkhead "as2": unknown pool config "huge" (known: big, default)`)
	_, ok := r.Find("as2")
	assert.False(t, ok, "a failed creation registers nothing")

	require.NoError(t, r.AddConfig("small", pool.Config{MaxWorkers: 1}))
	s, err := r.GetWithConfig("x400", "small")
	require.NoError(t, err)
	assert.Equal(t, 1, s.Config().MaxWorkers)
	err = r.AddConfig("bad", pool.Config{MaxWorkers: 2, CoreWorkers: 3})
	require.EqualError(t, err, `bulkhead "bad": invalid config: CoreWorkers must be <= MaxWorkers (2), got 3`)
}

func TestNewRegistryRejectsInvalidDefaultsWhereTheyAreGiven(t *testing.T) {
	r, err := pool.NewRegistry(pool.Config{})
	assert.Nil(t, r)
	require.EqualError(t, err, `bulkhead "default": invalid config: MaxWorkers must be >= 1, got 0`)
	require.ErrorIs(t, err, bulkhead.ErrInvalidConfig)
}

func TestNewRegistryRejectsAnInvalidNamedConfigAndANilClock(t *testing.T) {
	_, err := pool.NewRegistry(pool.DefaultConfig(), pool.WithConfig("legacy", pool.Config{MaxWorkers: 1, QueueCapacity: -1, MaxQueueWait: bulkhead.NoTimeout}))
	require.EqualError(t, err, `bulkhead "legacy": invalid config: QueueCapacity must be >= 0, got -1`)
	_, err = pool.NewRegistry(pool.DefaultConfig(), pool.WithClock(nil))
	require.EqualError(t, err, "pool: NewRegistry: WithClock: clock must not be nil")
}

func TestPoolRegistryAllIsSortedAndRemoveForgets(t *testing.T) {
	r, err := pool.NewRegistry(pool.Config{MaxWorkers: 1})
	require.NoError(t, err)
	var created []*pool.Pool
	for _, n := range []string{"sftp", "as2", "soap"} {
		p, err := r.Get(n)
		require.NoError(t, err)
		created = append(created, p)
	}
	var names []string
	for _, p := range r.All() {
		names = append(names, p.Name())
	}
	assert.Equal(t, []string{"as2", "sftp", "soap"}, names)
	assert.True(t, r.Remove("sftp"))
	assert.False(t, r.Remove("sftp"))
	assert.Len(t, r.All(), 2)
	for _, p := range created {
		require.NoError(t, p.Close(context.Background()))
	}
}

func TestPoolRegistryPassesOptionsAndClosesEveryPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := testkit.NewVirtualClock(time.Unix(0, 0))
		r, err := pool.NewRegistry(pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: time.Minute}, pool.WithClock(clock))
		require.NoError(t, err)
		a, err := r.Get("a")
		require.NoError(t, err)
		b, err := r.Get("b")
		require.NoError(t, err)
		g := newPoolGate(t)
		busy := pool.Submit(context.Background(), a, poolTaskWaitingOn(g, 1))
		queued := pool.Submit(context.Background(), a, poolTaskWaitingOn(g, 2))
		assert.Equal(t, 1, clock.PendingTimers(), "the registry's pool uses the injected clock")
		stuck := pool.Submit(context.Background(), b, func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, context.Cause(ctx)
		})
		synctest.Wait()

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		go g.open() // a drains; b only stops when Close cancels it
		err = r.Close(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), `pool "b"`)
		assert.NotContains(t, err.Error(), `pool "a"`)
		_, err = stuck.Get(context.Background())
		assert.ErrorIs(t, err, pool.ErrClosed)
		for _, f := range []*pool.Future[int]{busy, queued} {
			_, err := f.Get(context.Background())
			assert.NoError(t, err)
		}
		require.NoError(t, r.Close(context.Background()))
		if !errors.Is(pool.Submit(context.Background(), a, poolTaskWaitingOn(g, 3)).Err(), pool.ErrClosed) {
			t.Error("a pool of a closed registry accepted a task")
		}
	})
}
