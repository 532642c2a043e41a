package adaptive_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestRegistryGivesEachPartnerItsOwnAlgorithm(t *testing.T) {
	clock := testkit.NewVirtualClock(epoch)
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	require.NoError(t, err)
	testkit.CheckRegistry(t, reg)
	made := 0
	ar, err := adaptive.NewRegistry(reg, adaptive.Config{Algorithm: func() adaptive.Algorithm {
		made++
		return &adaptive.AIMD{}
	}}, adaptive.WithClock(clock))
	require.NoError(t, err)

	fast, err := ar.Get("fast")
	require.NoError(t, err)
	slow, err := ar.Get("slow")
	require.NoError(t, err)
	again, _ := ar.Get("fast")
	assert.Same(t, fast, again)
	assert.Equal(t, 2, made)

	// fast succeeds with every permit in use: +1; slow times out: ×0.9.
	runTyped(t, fast, clock, 10, 10, 200*ms)
	for range 10 {
		c, _ := slow.TryAcquire()
		clock.Advance(20 * ms)
		c.Finish(errDeadline)
	}
	assert.Equal(t, 11, fast.Stats().Limit)
	assert.Equal(t, 9, slow.Stats().Limit)
	s, _ := reg.Find("slow")
	assert.Equal(t, 9, s.Config().MaxConcurrentCalls)

	all := ar.All()
	require.Len(t, all, 2)
	assert.Equal(t, "fast", all[0].Name())
	found, ok := ar.Find("slow")
	assert.True(t, ok)
	assert.Same(t, slow, found)
	assert.Same(t, reg, ar.Semaphores())
}

func TestRegistryFollowsARecreatedSemaphore(t *testing.T) {
	reg, err := bulkhead.NewRegistry(bulkhead.DefaultConfig())
	require.NoError(t, err)
	ar, err := adaptive.NewRegistry(reg, adaptive.Config{})
	require.NoError(t, err)
	old, _ := ar.Get("walmart")
	reg.Remove("walmart")
	fresh, err := ar.Get("walmart")
	require.NoError(t, err)
	assert.NotSame(t, old, fresh)
	assert.NotSame(t, old.Semaphore(), fresh.Semaphore())
}

func TestRegistryRefusesABadConfig(t *testing.T) {
	reg, err := bulkhead.NewRegistry(bulkhead.DefaultConfig())
	require.NoError(t, err)
	_, err = adaptive.NewRegistry(reg, adaptive.Config{Min: 3, Max: 2})
	assert.ErrorIs(t, err, adaptive.ErrInvalidConfig)
	_, err = adaptive.NewRegistry(reg, adaptive.Config{}, adaptive.WithClock(nil))
	assert.Error(t, err)
	assert.Panics(t, func() { _, _ = adaptive.NewRegistry(nil, adaptive.Config{}) })
}

func TestRegistryConfigureGivesAPartnerItsOwnConfig(t *testing.T) {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	require.NoError(t, err)
	ar, err := adaptive.NewRegistry(reg, adaptive.Config{})
	require.NoError(t, err)
	walmart, err := ar.Configure("walmart", adaptive.Config{Min: 5, Max: 10})
	require.NoError(t, err)
	assert.Equal(t, 10, walmart.Stats().Limit, "clamped to its own Max")
	got, _ := ar.Get("walmart")
	assert.Same(t, walmart, got)
	target, _ := ar.Get("target")
	assert.Equal(t, 20, target.Stats().Limit, "the registry's config")
	_, err = ar.Configure("walmart", adaptive.Config{Min: 3, Max: 2})
	assert.ErrorIs(t, err, adaptive.ErrInvalidConfig)
	got, _ = ar.Get("walmart")
	assert.Same(t, walmart, got, "a bad config changes nothing")
}

func TestOnlyConfiguredLeavesOtherPartnersStatic(t *testing.T) {
	clock := testkit.NewVirtualClock(epoch)
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	require.NoError(t, err)
	testkit.CheckRegistry(t, reg)
	ar, err := adaptive.WatchRegistry(reg, adaptive.Config{Algorithm: func() adaptive.Algorithm { return &adaptive.AIMD{} }},
		adaptive.WithClock(clock), adaptive.OnlyConfigured())
	require.NoError(t, err)
	defer ar.Stop()
	_, err = ar.Configure("walmart", adaptive.Config{Algorithm: func() adaptive.Algorithm { return &adaptive.AIMD{} }})
	require.NoError(t, err)
	_, err = ar.Get("target")
	assert.ErrorIs(t, err, adaptive.ErrNotAdaptive)
	for _, name := range []string{"walmart", "target"} {
		sem, _ := reg.Get(name)
		for range 10 {
			require.True(t, sem.TryAcquirePermission())
		}
		clock.Advance(150 * ms)
		for range 10 {
			sem.FinishCall()
		}
	}
	w, _ := reg.Find("walmart")
	tg, _ := reg.Find("target")
	assert.Equal(t, 11, w.Config().MaxConcurrentCalls)
	assert.Equal(t, 10, tg.Config().MaxConcurrentCalls)
	assert.Len(t, ar.All(), 1)
}
