package bulkhead_test

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// The keyed API read as a hostile caller would: each test breaks a promise
// of the docs on purpose and checks what the registry does about it.

// A second give-back through the same Lease would return a permit another
// call holds: the key would then admit one call more than its limit. It
// panics instead, and the limit holds.
func TestLeaseGivenBackTwicePanicsAndFreesNoOtherCallsPermit(t *testing.T) {
	r, _ := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2}, bulkhead.WithIdleTimeout(time.Minute))
	first := mustGrant(t, r, "k")
	second := mustGrant(t, r, "k")
	first.FinishCall()
	assert.PanicsWithValue(t, "bulkhead: Lease.FinishCall on a Lease that holds no permit (the zero Lease of a failed call, or a Lease already given back)",
		func() { first.FinishCall() })
	assert.Panics(t, func() { first.ReleasePermission() })
	assert.Equal(t, "", first.Name(), "a Lease given back still names a bulkhead")

	third := mustGrant(t, r, "k") // the permit first gave back
	_, err := r.TryAcquirePermission("k", bulkhead.CallOptions{})
	require.ErrorIs(t, err, bulkhead.ErrBulkheadFull, "k admitted a third call while two held its two permits")
	second.FinishCall()
	third.FinishCall()
}

// WithKeyConfig's func runs outside the registry's lock: it may call into
// the registry (a Get, another key's keyed call) without deadlocking it.
func TestKeyConfigFuncMayCallIntoTheRegistry(t *testing.T) {
	var reg *bulkhead.Registry
	r, _ := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1},
		bulkhead.WithConfig("gold", bulkhead.Config{MaxConcurrentCalls: 5}),
		bulkhead.WithKeyConfig(func(key string) string {
			if _, ok := reg.Find("tier/" + key); ok { // calls into the registry
				return "gold"
			}
			if key == "nested" {
				l, err := reg.TryAcquirePermission("inner", bulkhead.CallOptions{ConfigName: bulkhead.DefaultConfigName})
				if err == nil {
					l.FinishCall()
				}
			}
			return bulkhead.DefaultConfigName
		}))
	reg = r
	_, err := r.Get("tier/acme")
	require.NoError(t, err)

	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, key := range []string{"acme", "nested", "bob"} {
			l, err := r.TryAcquirePermission(key, bulkhead.CallOptions{})
			if assert.NoError(t, err, key) {
				l.FinishCall()
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a key-config func that calls into the registry deadlocked it")
	}
	limits := map[string]int{}
	for _, s := range r.All() {
		limits[s.Name()] = s.Config().MaxConcurrentCalls
	}
	assert.Equal(t, map[string]int{"tier/acme": 1, "acme": 5, "nested": 1, "inner": 1, "bob": 1}, limits)
}

// A key-config func that panics or calls runtime.Goexit ends the keyed call
// on its caller's goroutine; the registry holds nothing for it and goes on.
func TestKeyConfigFuncThatPanicsOrExitsLeavesNothingHeld(t *testing.T) {
	r, _ := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1},
		bulkhead.WithKeyConfig(func(key string) string {
			switch key {
			case "panics":
				panic("key-config bug")
			case "exits":
				runtime.Goexit()
			}
			return bulkhead.DefaultConfigName
		}))
	for key, want := range map[string]any{"panics": "key-config bug", "exits": testkit.Goexited} {
		for _, call := range []func(){
			func() { r.AcquirePermissionAsync(key, bulkhead.CallOptions{}) },
			func() { _, _ = r.TryAcquirePermission(key, bulkhead.CallOptions{}) },
			func() { _, _ = r.AcquirePermission(t.Context(), key, bulkhead.CallOptions{}) },
		} {
			assert.Equal(t, want, testkit.RunToEnd(call), key)
		}
	}
	assert.Empty(t, names(r), "a key whose config func failed got a bulkhead")
	l := mustGrant(t, r, "fine") // nothing was left locked
	l.FinishCall()
}

// An OnEvict func that calls runtime.Goexit ends the sweeping goroutine,
// but the other OnEvict funcs are still told (so every exporter forgets the
// series), and eviction goes on at the next sweep.
func TestOnEvictFuncThatExitsStopsNeitherTheOtherFuncsNorEviction(t *testing.T) {
	r, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.WithIdleTimeout(time.Second))
	var mu sync.Mutex
	var told []string
	r.OnEvict(func(string) { runtime.Goexit() })
	r.OnEvict(func(name string) {
		mu.Lock()
		told = append(told, name)
		mu.Unlock()
	})
	for _, key := range []string{"a", "b", "c"} {
		l := mustGrant(t, r, key)
		l.FinishCall()
	}
	for range 8 {
		// The sweep runs on the goroutine that advances the clock.
		testkit.RunToEnd(func() { clock.Advance(time.Second / 2) })
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(told)
	assert.Equal(t, []string{"a", "b", "c"}, told, "evictions the second OnEvict func was told of")
	assert.Empty(t, names(r), "bulkheads left after an OnEvict func exited a sweep")
	assert.Equal(t, uint64(3), r.Stats().Evictions)
}

// A flood of long keys (a megabyte header) must not grow a capped registry
// by their length: a key longer than the maximum key length that has no
// bulkhead is admitted by the catch-all.
func TestLongKeysWithoutABulkheadGoToTheCatchAll(t *testing.T) {
	r, _ := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1},
		bulkhead.WithMaxBulkheads(100, bulkhead.Config{MaxConcurrentCalls: 10}))
	long := strings.Repeat("x", bulkhead.DefaultMaxKeyLength+1)
	l := mustGrant(t, r, long)
	assert.Equal(t, bulkhead.CatchAllName, l.Name())
	l.FinishCall()
	l = mustGrant(t, r, long[1:]) // exactly the maximum: a bulkhead of its own
	assert.Equal(t, long[1:], l.Name())
	l.FinishCall()
	assert.Equal(t, bulkhead.RegistryStats{Bulkheads: 2, CatchAllCalls: 1}, r.Stats())

	// A name you control may be long: Get creates it, and keyed calls for
	// it then use it.
	_, err := r.Get(long)
	require.NoError(t, err)
	l = mustGrant(t, r, long)
	assert.Equal(t, long, l.Name())
	l.FinishCall()

	short, _ := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1},
		bulkhead.WithMaxBulkheads(100, bulkhead.Config{MaxConcurrentCalls: 10}), bulkhead.WithMaxKeyLength(4))
	l = mustGrant(t, short, "abcde")
	assert.Equal(t, bulkhead.CatchAllName, l.Name())
	l.FinishCall()

	for _, tc := range []struct {
		opts []bulkhead.RegistryOption
		want string
	}{
		{[]bulkhead.RegistryOption{bulkhead.WithMaxKeyLength(0), bulkhead.WithMaxBulkheads(1, bulkhead.Config{MaxConcurrentCalls: 1})},
			"bulkhead: NewRegistry: WithMaxKeyLength: length must be at least 1, got 0"},
		{[]bulkhead.RegistryOption{bulkhead.WithMaxKeyLength(64)},
			"bulkhead: NewRegistry: WithMaxKeyLength needs WithMaxBulkheads (its catch-all admits the longer keys)"},
	} {
		_, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1}, tc.opts...)
		assert.EqualError(t, err, tc.want)
	}
}

// The keyed calls' own callbacks may re-enter the registry for the same
// key, panic or call runtime.Goexit: the registry lets go of the bulkhead
// before they run, so it is evicted once idle whatever they did.
func TestCallbacksOfKeyedCallsThatReenterPanicOrExitLeaveTheBulkheadEvictable(t *testing.T) {
	r, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: 10},
		bulkhead.WithIdleTimeout(time.Second))
	held := mustGrant(t, r, "k")
	reentered := make(chan bulkhead.Lease, 1)
	// The waiters join 100 ms apart, so each expires in a sweep of its own
	// on the goroutine that advances the clock (RunToEnd's: a callback
	// exits it). A sweep of several callbacks would run them through a
	// relay whose watchdog, on a loaded machine, may hand the panicking one
	// to a goroutine of its own, where its panic ends the process (as any
	// callback's panic on a timer's goroutine does).
	for i, cb := range []func(error){
		func(error) { panic(errors.New("callback bug")) },
		func(error) { runtime.Goexit() },
		func(error) { // re-enters for the same key while it is full
			_, l := r.AcquirePermissionAsync("k", bulkhead.CallOptions{})
			reentered <- l
		},
	} {
		a, _ := r.AcquirePermissionAsync("k", bulkhead.CallOptions{})
		require.ErrorIs(t, a.Err(), bulkhead.ErrPending, "call %d", i)
		a.OnDone(cb)
		clock.Advance(100 * time.Millisecond)
	}
	testkit.RunToEnd(func() { clock.Advance(700 * time.Millisecond) })
	for range 2 {
		testkit.RunToEnd(func() { clock.Advance(100 * time.Millisecond) })
	}
	var again bulkhead.Lease
	select {
	case again = <-reentered:
	case <-time.After(10 * time.Second):
		t.Fatal("the re-entering callback did not run")
	}
	assert.PanicsWithValue(t, `bulkhead: Lease.FinishCall on the Lease of a call that was not granted (it waits, or was rejected or cancelled: bulkhead: permit acquisition pending)`,
		func() { again.FinishCall() }, "the Lease of a waiting call gave a permit back")
	testkit.RunToEnd(func() { clock.Advance(time.Second) }) // the re-entered call expires too
	assert.PanicsWithValue(t, `bulkhead: Lease.FinishCall on the Lease of a call that was not granted (it waits, or was rejected or cancelled: bulkhead "k": full, does not permit further calls (wait timeout))`,
		func() { again.FinishCall() }, "the Lease of a re-entered call that expired gave a permit back")
	held.FinishCall()
	for range 4 {
		testkit.RunToEnd(func() { clock.Advance(time.Second / 2) })
	}
	assert.Empty(t, names(r), "k is not evicted after its callbacks panicked, exited or re-entered")
}

// A Lease held on a bulkhead that Remove forgot gives its permit back to
// that bulkhead, never to the one created after it for the same key.
func TestLeaseOfARemovedBulkheadGivesBackToItNotToItsSuccessor(t *testing.T) {
	r, _ := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.WithIdleTimeout(time.Minute))
	old := mustGrant(t, r, "k")
	oldBulkhead, _ := r.Find("k")
	require.True(t, r.Remove("k"))
	next := mustGrant(t, r, "k")
	old.FinishCall()
	_, err := r.TryAcquirePermission("k", bulkhead.CallOptions{})
	require.ErrorIs(t, err, bulkhead.ErrBulkheadFull, "the old Lease's give-back reached the new bulkhead")
	assert.Equal(t, 1, oldBulkhead.Metrics().AvailableConcurrentCalls)
	next.FinishCall()
}

// Shrinking a keyed bulkhead's limit under held Leases: the calls in flight
// finish, the new limit holds from then on; an eviction then re-creates the
// bulkhead from its named configuration (a ChangeConfig through All is not
// kept across an eviction, as All's doc says).
func TestShrinkingAKeyedBulkheadUnderHeldLeasesKeepsTheNewLimitUntilEviction(t *testing.T) {
	r, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 3}, bulkhead.WithIdleTimeout(time.Second))
	leases := []*bulkhead.Lease{mustGrant(t, r, "k"), mustGrant(t, r, "k"), mustGrant(t, r, "k")}
	require.NoError(t, r.All()[0].ChangeConfig(bulkhead.Config{MaxConcurrentCalls: 1}))
	for _, l := range leases[:2] {
		l.FinishCall()
	}
	_, err := r.TryAcquirePermission("k", bulkhead.CallOptions{})
	require.ErrorIs(t, err, bulkhead.ErrBulkheadFull, "k admitted a call above its new limit of 1")
	leases[2].FinishCall()
	l := mustGrant(t, r, "k")
	_, err = r.TryAcquirePermission("k", bulkhead.CallOptions{})
	require.ErrorIs(t, err, bulkhead.ErrBulkheadFull)
	l.FinishCall()
	clock.Advance(2 * time.Second)
	require.Empty(t, names(r))
	l = mustGrant(t, r, "k")
	assert.Equal(t, 3, r.All()[0].Config().MaxConcurrentCalls, "re-created from its configuration")
	l.FinishCall()
}
