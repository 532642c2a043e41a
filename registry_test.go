package bulkhead_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
)

func TestRegistryReturnsSameBulkheadPerName(t *testing.T) {
	r := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	a, err := r.Bulkhead("walmart")
	require.NoError(t, err)
	b, err := r.Bulkhead("walmart")
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
	big := bulkhead.Config{MaxConcurrentCalls: 60, MaxWaitDuration: 50 * time.Millisecond}
	r := bulkhead.NewRegistry(bulkhead.DefaultConfig(), bulkhead.WithConfig("big", big))
	w, err := r.BulkheadWithConfig("walmart", "big")
	require.NoError(t, err)
	assert.Equal(t, big, w.Config())

	_, err = r.BulkheadWithConfig("tesco", "huge")
	require.EqualError(t, err, `bulkhead "tesco": unknown config "huge" (known: big, default)`)
	_, ok := r.Find("tesco")
	assert.False(t, ok, "a failed creation registers nothing")

	require.NoError(t, r.AddConfig("small", bulkhead.Config{MaxConcurrentCalls: 2}))
	s, err := r.BulkheadWithConfig("aldi", "small")
	require.NoError(t, err)
	assert.Equal(t, 2, s.Config().MaxConcurrentCalls)
	require.ErrorIs(t, r.AddConfig("bad", bulkhead.Config{}), bulkhead.ErrInvalidConfig)
}

func TestRegistryInvalidDefaultsSurfaceOnCreation(t *testing.T) {
	r := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 0})
	_, err := r.Bulkhead("walmart")
	require.EqualError(t, err, `bulkhead "walmart": invalid config: MaxConcurrentCalls must be >= 1, got 0`)
}

func TestRegistryAllIsSortedAndRemoveForgets(t *testing.T) {
	r := bulkhead.NewRegistry(bulkhead.DefaultConfig())
	for _, n := range []string{"tesco", "aldi", "walmart"} {
		_, err := r.Bulkhead(n)
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
	clock := &countingClock{}
	r := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour},
		bulkhead.WithBulkheadOptions(bulkhead.WithClock(clock)))
	s, err := r.Bulkhead("walmart")
	require.NoError(t, err)
	require.True(t, s.TryAcquirePermission())
	a := s.AcquirePermissionAsync()
	assert.Equal(t, 1, clock.armed(), "the registry's bulkhead uses the injected clock")
	require.True(t, a.Cancel())
	s.ReleasePermission()
}
