package bulkhead_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestRegistryReturnsSameBulkheadPerName(t *testing.T) {
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		panic(err)
	}
	a, err := r.Get("walmart")
	require.NoError(t, err)
	b, err := r.Get("walmart")
	require.NoError(t, err)
	assert.Same(t, a, b)
	assert.Equal(t, 20, a.Config().MaxConcurrentCalls)
	found, ok := r.Find("walmart")
	assert.True(t, ok)
	assert.Same(t, a, found)
	_, ok = r.Find("carrefour")
	assert.False(t, ok)
}

func TestRegistryNamedConfigs(t *testing.T) {
	big := bulkhead.Config{MaxConcurrentCalls: 60, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded}
	r, err := bulkhead.NewRegistry(bulkhead.DefaultConfig(), bulkhead.WithConfig("big", big))
	if err != nil {
		panic(err)
	}
	w, err := r.GetWithConfig("walmart", "big")
	require.NoError(t, err)
	assert.Equal(t, big, w.Config())

	_, err = r.GetWithConfig("tesco", "huge")
	require.EqualError(t, err, `bulkhead "tesco": unknown config "huge" (known: big, default)`)
	_, ok := r.Find("tesco")
	assert.False(t, ok, "a failed creation registers nothing")

	require.NoError(t, r.AddConfig("small", bulkhead.Config{MaxConcurrentCalls: 2}))
	s, err := r.GetWithConfig("aldi", "small")
	require.NoError(t, err)
	assert.Equal(t, 2, s.Config().MaxConcurrentCalls)
	require.ErrorIs(t, r.AddConfig("bad", bulkhead.Config{}), bulkhead.ErrInvalidConfig)
}

func TestRegistryInvalidDefaultsFailWhereTheyAreGiven(t *testing.T) {
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 0})
	require.EqualError(t, err, `bulkhead "default": invalid config: MaxConcurrentCalls must be >= 1, got 0`)
	assert.Nil(t, r)
}

func TestRegistryAllIsSortedAndRemoveForgets(t *testing.T) {
	r, err := bulkhead.NewRegistry(bulkhead.DefaultConfig())
	if err != nil {
		panic(err)
	}
	for _, n := range []string{"tesco", "aldi", "walmart"} {
		_, err := r.Get(n)
		require.NoError(t, err)
	}
	var names []string
	for _, s := range r.All() {
		names = append(names, s.Name())
	}
	assert.Equal(t, []string{"aldi", "tesco", "walmart"}, names)
	assert.True(t, r.Remove("tesco"))
	assert.False(t, r.Remove("tesco"))
	assert.Len(t, r.All(), 2)
}

func TestRegistryPassesBulkheadOptions(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	if err != nil {
		panic(err)
	}
	s, err := r.Get("walmart")
	require.NoError(t, err)
	require.True(t, s.TryAcquirePermission())
	a := s.AcquirePermissionAsync()
	assert.Equal(t, 1, clock.PendingTimers(), "the registry's bulkhead uses the injected clock")
	require.True(t, a.Cancel())
	s.ReleasePermission()
}

func TestRegistryOnEventCoversPresentAndFutureBulkheads(t *testing.T) {
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1})
	if err != nil {
		panic(err)
	}
	early, err := r.Get("early")
	require.NoError(t, err)
	var got []string
	remove := r.OnEvent(func(e bulkhead.Event) { got = append(got, e.Name+":"+e.Type.String()) })
	late, err := r.Get("late")
	require.NoError(t, err)

	early.TryAcquirePermission()
	late.TryAcquirePermission() // the very first event of a new bulkhead is seen
	assert.Equal(t, []string{"early:permitted", "late:permitted"}, got)

	require.True(t, r.Remove("early"))
	early.FinishCall()
	late.FinishCall()
	assert.Equal(t, []string{"early:permitted", "late:permitted", "late:finished"}, got, "removed bulkheads are unsubscribed")

	remove()
	remove()
	late.TryAcquirePermission()
	late.FinishCall()
	assert.Len(t, got, 3, "unregistered everywhere")
	assert.PanicsWithValue(t, "bulkhead: Registry.OnEvent called with a nil listener", func() { r.OnEvent(nil) })
}

func TestRegistryConfigureCreatesOrChanges(t *testing.T) {
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1})
	if err != nil {
		panic(err)
	}
	cfg := bulkhead.Config{MaxConcurrentCalls: 7, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded}
	s, err := r.Configure("walmart", cfg)
	require.NoError(t, err)
	assert.Equal(t, cfg, s.Config(), "created with cfg, never with the defaults")

	again, err := r.Configure("walmart", bulkhead.Config{MaxConcurrentCalls: 3})
	require.NoError(t, err)
	assert.Same(t, s, again)
	assert.Equal(t, 3, s.Config().MaxConcurrentCalls)

	_, err = r.Configure("walmart", bulkhead.Config{})
	require.ErrorIs(t, err, bulkhead.ErrInvalidConfig)
	assert.Equal(t, 3, s.Config().MaxConcurrentCalls, "unchanged on error")
	_, err = r.Configure("tesco", bulkhead.Config{})
	require.ErrorIs(t, err, bulkhead.ErrInvalidConfig)
	_, ok := r.Find("tesco")
	assert.False(t, ok)
}
