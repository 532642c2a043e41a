package pool_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
)

func newKeyedPoolRegistry(t *testing.T, cfg pool.Config, opts ...pool.RegistryOption) *pool.Registry {
	t.Helper()
	r, err := pool.NewRegistry(cfg, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close(context.Background())) })
	return r
}

func TestIdleKeyedPoolIsEvictedClosedAndRecreated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newKeyedPoolRegistry(t, pool.Config{MaxWorkers: 2}, pool.WithIdleTimeout(time.Minute))
		v, err := pool.SubmitKeyed(context.Background(), r, "acme", pool.CallOptions{}, func(context.Context) (int, error) { return 7, nil }).Get(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 7, v)
		first := r.All()[0]
		time.Sleep(59 * time.Second)
		assert.Equal(t, 1, r.Stats().Pools, "evicted before the idle timeout")
		time.Sleep(31 * time.Second)
		synctest.Wait()
		assert.Equal(t, pool.RegistryStats{Evictions: 1}, r.Stats())
		_, err = pool.Submit(context.Background(), first, func(context.Context) (int, error) { return 0, nil }).Get(context.Background())
		assert.ErrorIs(t, err, pool.ErrClosed, "an evicted pool is closed")
		_, err = pool.SubmitKeyed(context.Background(), r, "acme", pool.CallOptions{}, func(context.Context) (int, error) { return 1, nil }).Get(context.Background())
		require.NoError(t, err)
		assert.NotSame(t, first, r.All()[0])
	})
}

func TestKeyedPoolIsNotEvictedWhileItsTaskRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newKeyedPoolRegistry(t, pool.Config{MaxWorkers: 1}, pool.WithIdleTimeout(time.Second))
		release := make(chan struct{})
		f := pool.SubmitKeyed(context.Background(), r, "k", pool.CallOptions{}, func(context.Context) (int, error) { <-release; return 1, nil })
		time.Sleep(time.Hour)
		assert.Equal(t, pool.RegistryStats{Pools: 1}, r.Stats(), "evicted while its task runs")
		close(release)
		_, err := f.Get(context.Background())
		require.NoError(t, err)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, pool.RegistryStats{Evictions: 1}, r.Stats())
	})
}

func TestKeysBeyondTheCapRunOnTheCatchAllPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newKeyedPoolRegistry(t, pool.Config{MaxWorkers: 1}, pool.WithIdleTimeout(time.Minute), pool.WithMaxPools(2, pool.Config{MaxWorkers: 1}))
		for _, k := range []string{"a", "b", "c", "d"} {
			_, err := pool.SubmitKeyed(context.Background(), r, k, pool.CallOptions{}, func(context.Context) (int, error) { return 0, nil }).Get(context.Background())
			require.NoError(t, err, k)
			synctest.Wait() // the catch-all's one worker is idle again ("d" follows "c" there)
		}
		assert.Equal(t, pool.RegistryStats{Pools: 3, CatchAllCalls: 2}, r.Stats())
		_, err := r.Get("e")
		assert.ErrorIs(t, err, pool.ErrRegistryFull)
		assert.ErrorContains(t, err, `pool "e"`)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		assert.Equal(t, pool.RegistryStats{Pools: 1, Evictions: 2, CatchAllCalls: 2}, r.Stats(), "the catch-all is never evicted")
	})
}

// A flood of long keys must not grow a capped pool registry by their
// length: a key longer than the maximum key length that has no pool runs on
// the catch-all.
func TestLongKeysWithoutAPoolRunOnTheCatchAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newKeyedPoolRegistry(t, pool.Config{MaxWorkers: 1}, pool.WithMaxPools(10, pool.Config{MaxWorkers: 1}))
		long := strings.Repeat("x", bulkhead.DefaultMaxKeyLength+1)
		for _, k := range []string{long, long[1:]} {
			_, err := pool.SubmitKeyed(context.Background(), r, k, pool.CallOptions{}, func(context.Context) (int, error) { return 0, nil }).Get(context.Background())
			require.NoError(t, err)
		}
		assert.Equal(t, pool.RegistryStats{Pools: 2, CatchAllCalls: 1}, r.Stats(), "the longer key got a pool, or the one at the bound did not")
		short := newKeyedPoolRegistry(t, pool.Config{MaxWorkers: 1}, pool.WithMaxPools(10, pool.Config{MaxWorkers: 1}), pool.WithMaxKeyLength(2))
		_, err := pool.SubmitKeyed(context.Background(), short, "abc", pool.CallOptions{}, func(context.Context) (int, error) { return 0, nil }).Get(context.Background())
		require.NoError(t, err)
		assert.Equal(t, pool.RegistryStats{Pools: 1, CatchAllCalls: 1}, short.Stats())
	})
}

func TestKeyedPoolBadInputGetsClearErrors(t *testing.T) {
	_, err := pool.NewRegistry(pool.Config{MaxWorkers: 1}, pool.WithIdleTimeout(0))
	assert.ErrorContains(t, err, "WithIdleTimeout: idle timeout must be positive, got 0s")
	_, err = pool.NewRegistry(pool.Config{MaxWorkers: 1}, pool.WithIdleTimeout(-time.Second))
	assert.ErrorContains(t, err, "must be positive, got -1s")
	_, err = pool.NewRegistry(pool.Config{MaxWorkers: 1}, pool.WithMaxPools(0, pool.Config{MaxWorkers: 1}))
	assert.ErrorContains(t, err, "WithMaxPools: max must be at least 1, got 0")
	_, err = pool.NewRegistry(pool.Config{MaxWorkers: 1}, pool.WithMaxPools(1, pool.Config{}))
	assert.ErrorContains(t, err, bulkhead.CatchAllName)
	_, err = pool.NewRegistry(pool.Config{MaxWorkers: 1}, pool.WithMaxPools(1, pool.Config{MaxWorkers: 1}), pool.WithMaxKeyLength(0))
	assert.EqualError(t, err, "pool: NewRegistry: WithMaxKeyLength: length must be at least 1, got 0")
	_, err = pool.NewRegistry(pool.Config{MaxWorkers: 1}, pool.WithMaxKeyLength(8))
	assert.EqualError(t, err, "pool: NewRegistry: WithMaxKeyLength needs WithMaxPools (its catch-all runs the longer keys)")

	r := newKeyedPoolRegistry(t, pool.Config{MaxWorkers: 1})
	_, err = pool.SubmitKeyed(context.Background(), r, "", pool.CallOptions{}, func(context.Context) (int, error) { return 0, nil }).Get(context.Background())
	assert.ErrorContains(t, err, "key must not be empty")
	_, err = pool.SubmitKeyed(context.Background(), r, "k", pool.CallOptions{ConfigName: "nope"}, func(context.Context) (int, error) { return 0, nil }).Get(context.Background())
	assert.ErrorContains(t, err, `"nope"`)
	assert.Panics(t, func() { pool.SubmitKeyed[int](context.Background(), nil, "k", pool.CallOptions{}, nil) })
	assert.Panics(t, func() { pool.SubmitKeyed[int](context.Background(), r, "k", pool.CallOptions{}, nil) })
	assert.Equal(t, 0, r.Stats().Pools, "bad input must create nothing")
}
