package bulkhead_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newKeyedRegistry(t *testing.T, cfg bulkhead.Config, opts ...bulkhead.RegistryOption) (*bulkhead.Registry, *testkit.VirtualClock) {
	t.Helper()
	clock := testkit.NewVirtualClock(epoch)
	r, err := bulkhead.NewRegistry(cfg, append([]bulkhead.RegistryOption{bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock))}, opts...)...)
	require.NoError(t, err)
	testkit.CheckRegistry(t, r)
	return r, clock
}

// names returns the names of the registry's bulkheads, without pinning them.
func names(r *bulkhead.Registry) []string {
	var out []string
	for _, s := range r.All() {
		out = append(out, s.Name())
	}
	return out
}

func mustGrant(t *testing.T, r *bulkhead.Registry, key string) *bulkhead.Lease {
	t.Helper()
	a, l := r.AcquirePermissionAsync(key, bulkhead.CallOptions{})
	require.NoError(t, a.Err(), "keyed acquire of %q", key)
	return &l
}

func TestIdleKeyedBulkheadIsEvictedAndRecreatedFromItsConfig(t *testing.T) {
	r, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2}, bulkhead.WithIdleTimeout(time.Minute),
		bulkhead.WithConfig("vip", bulkhead.Config{MaxConcurrentCalls: 7}),
		bulkhead.WithKeyConfig(func(key string) string {
			if key == "acme" {
				return "vip"
			}
			return bulkhead.DefaultConfigName
		}))
	var events []string
	r.OnEvent(func(e bulkhead.Event) { events = append(events, e.Name+" "+e.Type.String()) })
	var evicted []string
	r.OnEvict(func(name string) { evicted = append(evicted, name) })

	mustGrant(t, r, "acme").FinishCall()
	first := r.All()[0]
	assert.Equal(t, 7, first.Config().MaxConcurrentCalls, "created from the configuration WithKeyConfig names")
	clock.Advance(59 * time.Second)
	assert.Equal(t, []string{"acme"}, names(r), "evicted before the idle timeout")
	clock.Advance(31 * time.Second) // 1.5 idle after the last call
	assert.Empty(t, names(r))
	assert.Equal(t, []string{"acme"}, evicted)
	assert.Equal(t, bulkhead.RegistryStats{Bulkheads: 0, Evictions: 1}, r.Stats())

	first.TryAcquirePermission() // an evicted bulkhead no longer reaches the registry's listeners
	first.ReleasePermission()
	assert.Equal(t, []string{"acme permitted", "acme finished"}, events)

	mustGrant(t, r, "acme").FinishCall()
	again := r.All()[0]
	assert.NotSame(t, first, again)
	assert.Equal(t, 7, again.Config().MaxConcurrentCalls)
	assert.Equal(t, 1, r.Stats().Bulkheads)
}

func TestKeyedBulkheadWithAPermitHeldOrACallQueuedIsNeverEvicted(t *testing.T) {
	r, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1},
		bulkhead.WithIdleTimeout(time.Second))
	held := mustGrant(t, r, "k")
	queued, queuedLease := r.AcquirePermissionAsync("k", bulkhead.CallOptions{})
	require.ErrorIs(t, queued.Err(), bulkhead.ErrPending)
	clock.Advance(10 * time.Second)
	require.Equal(t, []string{"k"}, names(r))

	held.FinishCall() // grants the queued call: its Lease now holds the bulkhead
	require.NoError(t, queued.Err())
	clock.Advance(10 * time.Second)
	require.Equal(t, []string{"k"}, names(r), "evicted while the granted call held its permit")
	queuedLease.ReleasePermission()
	clock.Advance(1500 * time.Millisecond)
	assert.Empty(t, names(r))
}

func TestRejectedOrCancelledKeyedCallLetsGoOfItsBulkhead(t *testing.T) {
	r, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: 1},
		bulkhead.WithIdleTimeout(time.Minute))
	held := mustGrant(t, r, "k")
	expires, _ := r.AcquirePermissionAsync("k", bulkhead.CallOptions{})
	full, fullLease := r.AcquirePermissionAsync("k", bulkhead.CallOptions{})
	require.ErrorIs(t, full.Err(), bulkhead.ErrBulkheadFull)
	assert.Equal(t, bulkhead.Lease{}, fullLease, "a rejected call gets the zero Lease")
	clock.Advance(time.Second)
	require.ErrorIs(t, expires.Err(), bulkhead.ErrBulkheadFull)
	cancelled, _ := r.AcquirePermissionAsync("k", bulkhead.CallOptions{})
	require.True(t, cancelled.Cancel())
	held.FinishCall()
	clock.Advance(90 * time.Second)
	assert.Empty(t, names(r), "a rejected, expired or cancelled call kept its bulkhead")
}

func TestGetPinsABulkheadAgainstEviction(t *testing.T) {
	r, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2}, bulkhead.WithIdleTimeout(time.Second))
	mustGrant(t, r, "keyed").FinishCall()
	mustGrant(t, r, "got").FinishCall()
	got, err := r.Get("got")
	require.NoError(t, err)
	mustGrant(t, r, "found").FinishCall()
	_, ok := r.Find("found")
	require.True(t, ok)
	configured, err := r.Configure("configured", bulkhead.Config{MaxConcurrentCalls: 3})
	require.NoError(t, err)
	clock.Advance(time.Hour)
	assert.Equal(t, []string{"configured", "found", "got"}, names(r))
	l := mustGrant(t, r, "got")
	assert.Equal(t, 1, got.Metrics().InFlightCalls, "the keyed call went to the pinned bulkhead")
	l.FinishCall()
	assert.Equal(t, 3, configured.Config().MaxConcurrentCalls)
	assert.Equal(t, 0, clock.PendingTimers(), "the sweep goes on with only pinned bulkheads")
}

func TestSweepStopsWhenOnlyPinnedBulkheadsRemain(t *testing.T) {
	r, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2}, bulkhead.WithIdleTimeout(time.Second))
	_, err := r.Get("pinned")
	require.NoError(t, err)
	mustGrant(t, r, "k").FinishCall()
	clock.Advance(time.Hour)
	assert.Equal(t, 0, clock.PendingTimers(), "the sweep goes on with nothing to evict")
	mustGrant(t, r, "k").FinishCall()
	assert.Equal(t, 1, clock.PendingTimers(), "a new keyed bulkhead did not arm the sweep")
	clock.Advance(time.Hour)
	assert.Equal(t, []string{"pinned"}, names(r))
}

func TestKeysBeyondTheCapShareTheCatchAll(t *testing.T) {
	r, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 5},
		bulkhead.WithMaxBulkheads(2, bulkhead.Config{MaxConcurrentCalls: 1}), bulkhead.WithIdleTimeout(time.Second))
	a := mustGrant(t, r, "a")
	b := mustGrant(t, r, "b")
	c := mustGrant(t, r, "c")
	assert.Equal(t, "a", a.Name())
	assert.Equal(t, bulkhead.CatchAllName, c.Name(), "a new key beyond the cap goes to the catch-all")
	d, dLease := r.AcquirePermissionAsync("d", bulkhead.CallOptions{})
	require.ErrorIs(t, d.Err(), bulkhead.ErrBulkheadFull, "the catch-all has its own limit")
	assert.Equal(t, bulkhead.Lease{}, dLease)
	again := mustGrant(t, r, "a")
	assert.Equal(t, "a", again.Name(), "a key that has a bulkhead keeps it at the cap")
	again.FinishCall()

	_, err := r.Get("e")
	require.ErrorIs(t, err, bulkhead.ErrRegistryFull)
	assert.EqualError(t, err, `bulkhead "e": registry is full: it holds 2 bulkheads (WithMaxBulkheads)`)
	_, err = r.Configure("e", bulkhead.Config{MaxConcurrentCalls: 1})
	require.ErrorIs(t, err, bulkhead.ErrRegistryFull)
	catchAll, err := r.Get(bulkhead.CatchAllName)
	require.NoError(t, err)
	assert.Equal(t, 1, catchAll.Metrics().InFlightCalls)
	assert.False(t, r.Remove(bulkhead.CatchAllName), "the catch-all cannot be removed")
	assert.Equal(t, bulkhead.RegistryStats{Bulkheads: 3, CatchAllCalls: 2}, r.Stats())

	a.FinishCall()
	b.FinishCall()
	c.FinishCall()
	clock.Advance(2 * time.Second)
	assert.Equal(t, []string{bulkhead.CatchAllName}, names(r))
	e := mustGrant(t, r, "e")
	assert.Equal(t, "e", e.Name(), "evictions made room again")
	e.FinishCall()
}

func TestRegistryRejectsBadKeyedInputWithErrorsNamingIt(t *testing.T) {
	cfg := bulkhead.Config{MaxConcurrentCalls: 1}
	for _, tc := range []struct {
		opt  bulkhead.RegistryOption
		want string
	}{
		{bulkhead.WithIdleTimeout(0), "bulkhead: NewRegistry: WithIdleTimeout: idle timeout must be positive, got 0s"},
		{bulkhead.WithIdleTimeout(-time.Second), "bulkhead: NewRegistry: WithIdleTimeout: idle timeout must be positive, got -1s"},
		{bulkhead.WithMaxBulkheads(0, cfg), "bulkhead: NewRegistry: WithMaxBulkheads: max must be at least 1, got 0"},
		{bulkhead.WithMaxBulkheads(-3, cfg), "bulkhead: NewRegistry: WithMaxBulkheads: max must be at least 1, got -3"},
		{bulkhead.WithMaxBulkheads(1, bulkhead.Config{}), `bulkhead "catch-all": invalid config: MaxConcurrentCalls must be >= 1, got 0`},
		{bulkhead.WithKeyConfig(nil), "bulkhead: NewRegistry: WithKeyConfig: configName func must not be nil"},
		{bulkhead.WithSemaphoreOptions(bulkhead.WithClock(nil)), `bulkhead: NewRegistry: WithSemaphoreOptions: bulkhead "default": WithClock: clock must not be nil`},
	} {
		r, err := bulkhead.NewRegistry(cfg, tc.opt)
		assert.EqualError(t, err, tc.want)
		assert.Nil(t, r)
	}

	r, _ := newKeyedRegistry(t, cfg, bulkhead.WithKeyConfig(func(string) string { return "gold" }))
	a, l := r.AcquirePermissionAsync("", bulkhead.CallOptions{})
	assert.EqualError(t, a.Err(), "bulkhead: Registry.AcquirePermissionAsync: key must not be empty")
	assert.Equal(t, "", l.Name())
	a, _ = r.AcquirePermissionAsync("k", bulkhead.CallOptions{})
	assert.EqualError(t, a.Err(), `bulkhead "k": unknown config "gold" (known: default)`)
	assert.Empty(t, names(r))
	assert.PanicsWithValue(t, "bulkhead: Lease.FinishCall on a Lease that holds no permit (the zero Lease of a failed call, or a Lease already given back)", func() { l.FinishCall() })
	assert.PanicsWithValue(t, "bulkhead: Lease.ReleasePermission on a Lease that holds no permit (the zero Lease of a failed call, or a Lease already given back)", func() { l.ReleasePermission() })
	assert.Panics(t, func() { r.OnEvict(nil) })
}

func TestOnEvictListenerMayPanicAndBeRemoved(t *testing.T) {
	r, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.WithIdleTimeout(time.Second))
	calls := 0
	remove := r.OnEvict(func(string) { calls++; panic(errors.New("listener bug")) })
	mustGrant(t, r, "a").FinishCall()
	clock.Advance(2 * time.Second)
	assert.Equal(t, 1, calls)
	remove()
	remove()
	mustGrant(t, r, "a").FinishCall()
	clock.Advance(2 * time.Second)
	assert.Equal(t, 1, calls)
	assert.Empty(t, names(r))
}

// A caller's OnDone callback that panics cannot keep a keyed bulkhead from
// eviction: the registry lets go of a rejected call in its own callback,
// registered before any of the caller's.
func TestPanickingCallbackOfARejectedKeyedCallLetsGoOfItsBulkhead(t *testing.T) {
	r, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: 1},
		bulkhead.WithIdleTimeout(time.Minute))
	held := mustGrant(t, r, "k")
	queued, _ := r.AcquirePermissionAsync("k", bulkhead.CallOptions{})
	queued.OnDone(func(error) { panic("caller bug") })
	assert.PanicsWithValue(t, "caller bug", func() { clock.Advance(time.Second) }, "the wait expires on the Advance caller")
	require.ErrorIs(t, queued.Err(), bulkhead.ErrBulkheadFull)
	held.FinishCall()
	clock.Advance(2 * time.Minute)
	assert.Empty(t, names(r), "the panicking callback's call still held its bulkhead")
}

func TestKeyedCallWithConfigCreatesFromTheNamedConfigOnly(t *testing.T) {
	r, _ := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.WithConfig("big", bulkhead.Config{MaxConcurrentCalls: 9}))
	a, l := r.AcquirePermissionAsync("k", bulkhead.CallOptions{ConfigName: "big"})
	require.NoError(t, a.Err())
	l.FinishCall()
	a, l = r.AcquirePermissionAsync("k", bulkhead.CallOptions{ConfigName: "missing"}) // exists: used as it is
	require.NoError(t, a.Err())
	l.FinishCall()
	assert.Equal(t, 9, r.All()[0].Config().MaxConcurrentCalls)
	a, _ = r.AcquirePermissionAsync("other", bulkhead.CallOptions{ConfigName: "missing"})
	assert.EqualError(t, a.Err(), `bulkhead "other": unknown config "missing" (known: big, default)`)
}
