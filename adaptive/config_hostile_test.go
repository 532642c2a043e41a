package adaptive_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Config.Max: "the ceiling of the limit", any int >= Min. An algorithm
// that asks for more than any int (a huge estimate, +Inf is kept out as
// non-finite) gets the ceiling, applied to the semaphore, also when the
// ceiling is math.MaxInt, which a float64 cannot hold exactly.
func TestHostileHugeEstimateUnderTheLargestCeilingAppliesTheCeiling(t *testing.T) {
	for _, max := range []int{math.MaxInt, math.MaxInt - 100, math.MaxInt - 600, 1 << 62} {
		alg := &fixed{next: 1e300}
		b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 2},
			adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, Max: max})
		runTyped(t, b, clock, 10, 2, 50*ms)
		st := b.Stats()
		assert.Positive(t, st.Limit, "Max %d", max)
		assert.LessOrEqual(t, st.Limit, max)
		assert.Equal(t, st.Limit, b.Semaphore().Config().MaxConcurrentCalls, "Max %d: the limit is applied", max)
		assert.Greater(t, st.Limit, max/2)
	}
}

// New, Watch, NewRegistry and WatchRegistry take options as the root
// package's constructors do: a nil one in the list is bad input, reported
// as an error naming its index (as WithClock(nil) is), not a crash.
func TestHostileNilOptionFailsTheConstructorNamingIt(t *testing.T) {
	clock := testkit.NewVirtualClock(epoch)
	sem, err := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 2}, bulkhead.WithClock(clock))
	require.NoError(t, err)
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 2}, bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	require.NoError(t, err)
	opts := []adaptive.Option{adaptive.WithClock(clock), nil}
	for name, ctor := range map[string]func() (any, error){
		"New":           func() (any, error) { return adaptive.New(sem, adaptive.Config{}, opts...) },
		"Watch":         func() (any, error) { return adaptive.Watch(sem, adaptive.Config{}, opts...) },
		"NewRegistry":   func() (any, error) { return adaptive.NewRegistry(reg, adaptive.Config{}, opts...) },
		"WatchRegistry": func() (any, error) { return adaptive.WatchRegistry(reg, adaptive.Config{}, opts...) },
	} {
		var got error
		require.NotPanics(t, func() { _, got = ctor() }, name)
		require.Error(t, got, name)
		assert.Contains(t, got.Error(), "opts[1] must not be nil", name)
	}
	assert.Equal(t, 2, sem.Config().MaxConcurrentCalls, "nothing changed the semaphore")
}

// Config.Smoothing "must be in [0, 1)", MaxCutPerSecond "must be in
// [0, 1]": NaN and the infinities are outside, and refused naming the field.
func TestHostileNonFiniteConfigValuesAreRefusedWithTheField(t *testing.T) {
	for _, tc := range []struct {
		cfg   adaptive.Config
		field string
	}{
		{adaptive.Config{Smoothing: math.NaN()}, "Smoothing"},
		{adaptive.Config{Smoothing: math.Inf(1)}, "Smoothing"},
		{adaptive.Config{Smoothing: math.Inf(-1)}, "Smoothing"},
		{adaptive.Config{MaxCutPerSecond: math.NaN()}, "MaxCutPerSecond"},
		{adaptive.Config{MaxCutPerSecond: math.Inf(1)}, "MaxCutPerSecond"},
		{adaptive.Config{Min: math.MinInt}, "Min"},
		{adaptive.Config{Window: adaptive.Window{MaxDuration: math.MinInt64}}, "Window.MaxDuration"},
	} {
		var ce *adaptive.ConfigError
		if assert.ErrorAs(t, tc.cfg.Validate(), &ce, "%+v", tc.cfg) {
			assert.Equal(t, tc.field, ce.Field)
		}
	}
}

// New: "It fails with a *ConfigError if cfg is invalid"; Config.Algorithm
// "makes the limit algorithm". One that makes a nil pointer (a nil
// *Capacity, say) makes no algorithm: New fails naming Algorithm, as for
// a nil interface, instead of crashing now or at the first window.
func TestHostileAlgorithmFuncReturningANilPointerIsRefused(t *testing.T) {
	sem, err := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 2})
	require.NoError(t, err)
	for name, f := range map[string]func() adaptive.Algorithm{
		"*Capacity": func() adaptive.Algorithm { return (*adaptive.Capacity)(nil) },
		"*SetPoint": func() adaptive.Algorithm { return (*adaptive.SetPoint)(nil) },
		"*AIMD":     func() adaptive.Algorithm { return (*adaptive.AIMD)(nil) },
		"*fixed":    func() adaptive.Algorithm { return (*fixed)(nil) },
	} {
		var got error
		require.NotPanics(t, func() { _, got = adaptive.New(sem, adaptive.Config{Algorithm: f}) }, name)
		var ce *adaptive.ConfigError
		if assert.ErrorAs(t, got, &ce, name) {
			assert.Equal(t, "Algorithm", ce.Field, name)
		}
	}
}

// Registry.Configure: "It fails with a *ConfigError if cfg is invalid,
// changing nothing." An Algorithm func that makes no algorithm is such a
// config (New names it): the partner's semaphore is not created for it.
func TestHostileConfigureWithAnAlgorithmFuncThatMakesNoneCreatesNothing(t *testing.T) {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 2})
	require.NoError(t, err)
	ar, err := adaptive.NewRegistry(reg, adaptive.Config{})
	require.NoError(t, err)
	for _, f := range []func() adaptive.Algorithm{
		func() adaptive.Algorithm { return nil },
		func() adaptive.Algorithm { return (*adaptive.Capacity)(nil) },
	} {
		_, err = ar.Configure("walmart", adaptive.Config{Algorithm: f})
		var ce *adaptive.ConfigError
		if assert.ErrorAs(t, err, &ce) {
			assert.Equal(t, "Algorithm", ce.Field)
			assert.Equal(t, "walmart", ce.Name)
		}
		_, found := reg.Find("walmart")
		assert.False(t, found, "no semaphore created")
		_, found = ar.Find("walmart")
		assert.False(t, found, "no controller")
	}
}
