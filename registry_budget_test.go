package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Tests of a Registry joined to a Budget (WithBudget): a keyed call takes
// both levels and its Lease gives both back exactly once; evicted
// bulkheads' partners leave the budget.

// hubBudget is a budget of size permits with the classes critical and
// sheddable (the default), both waiting a minute, on clk.
func hubBudget(t testing.TB, size int, clk bulkhead.Clock, groups ...bulkhead.GroupConfig) *bulkhead.Budget {
	t.Helper()
	cfg := budgetConfig(size, 0, class("critical", 0, 0), class("sheddable", 0, 0))
	cfg.Groups = groups
	return newBudget(t, cfg, clk)
}

// newBudgetedRegistry is a registry whose bulkheads have partnerLimit
// permits (a minute's wait), joined to b, on clk.
func newBudgetedRegistry(t *testing.T, b *bulkhead.Budget, clk bulkhead.Clock, partnerLimit int, partner func(string) bulkhead.PartnerOptions, opts ...bulkhead.RegistryOption) *bulkhead.Registry {
	t.Helper()
	r, err := bulkhead.NewRegistry(partnerConfig(partnerLimit), append([]bulkhead.RegistryOption{
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clk)), bulkhead.WithBudget(b, partner)}, opts...)...)
	require.NoError(t, err)
	testkit.CheckRegistry(t, r)
	return r
}

func inFlight(t *testing.T, r *bulkhead.Registry, name string) int {
	t.Helper()
	for _, s := range r.All() {
		if s.Name() == name {
			return s.Metrics().InFlightCalls
		}
	}
	return 0
}

func TestBudgetedKeyedCallTakesBothLevelsAndItsLeaseGivesBothBack(t *testing.T) {
	clk := newClock()
	b := hubBudget(t, 5, clk)
	r := newBudgetedRegistry(t, b, clk, 4, nil)

	a, light := r.AcquirePermissionAsync("acme", bulkhead.CallOptions{})
	require.NoError(t, a.Err())
	heavy, err := r.TryAcquirePermission("acme", bulkhead.CallOptions{Weight: 3})
	require.NoError(t, err)
	assert.Equal(t, 4, b.Metrics().InUse, "weights 1 and 3")
	assert.Equal(t, 4, inFlight(t, r, "acme"), "a weighted call takes its weight of its bulkhead's permits too")

	heavy.FinishCall()
	assert.Equal(t, 1, b.Metrics().InUse)
	assert.Equal(t, 1, inFlight(t, r, "acme"))
	assert.PanicsWithValue(t, "bulkhead: Lease.FinishCall on a Lease that holds no permit (the zero Lease of a failed call, or a Lease already given back)",
		func() { heavy.FinishCall() }, "a second give-back through the same Lease")
	assert.Equal(t, 1, b.Metrics().InUse, "the second give-back took nothing from the budget")

	light.ReleasePermission()
	assert.Equal(t, 0, b.Metrics().InUse)
	assert.Equal(t, 0, inFlight(t, r, "acme"))
}

func TestBudgetedKeyedCallWaitsInTheBudgetAndAnotherKeysFinishGrantsIt(t *testing.T) {
	clk := newClock()
	b := hubBudget(t, 2, clk)
	r := newBudgetedRegistry(t, b, clk, 5, nil)
	first, err := r.AcquirePermission(context.Background(), "acme", bulkhead.CallOptions{Weight: 2})
	require.NoError(t, err)

	a, waiting := r.AcquirePermissionAsync("globex", bulkhead.CallOptions{})
	require.ErrorIs(t, a.Err(), bulkhead.ErrPending)
	assert.Equal(t, 1, b.Metrics().Queued)
	assert.Equal(t, 1, inFlight(t, r, "globex"), "the call holds its bulkhead's permit while it waits in the budget")
	assert.Panics(t, func() { waiting.FinishCall() }, "the Lease of a call still waiting holds nothing to give back")

	first.FinishCall()
	require.NoError(t, a.Err(), "granted by acme's permits given back")
	waiting.StartCall()
	waiting.FinishCall()
	assert.Equal(t, 0, inFlight(t, r, "globex"))
}

func TestBudgetedKeyedCallRejectedOrWithdrawnInTheBudgetGivesItsBulkheadPermitBack(t *testing.T) {
	clk := newClock()
	b := hubBudget(t, 1, clk)
	r := newBudgetedRegistry(t, b, clk, 5, nil)
	held, err := r.TryAcquirePermission("acme", bulkhead.CallOptions{})
	require.NoError(t, err)

	_, err = r.TryAcquirePermission("globex", bulkhead.CallOptions{})
	var be *bulkhead.BudgetError
	require.ErrorAs(t, err, &be, "try on a full budget")
	assert.Equal(t, bulkhead.NoWait, be.Reason)
	assert.ErrorIs(t, err, bulkhead.ErrBulkheadFull)
	assert.Equal(t, 0, inFlight(t, r, "globex"), "try: the bulkhead's permit went back")

	_, err = r.TryAcquirePermission("globex", bulkhead.CallOptions{Weight: 2})
	var we *bulkhead.WeightError
	require.ErrorAs(t, err, &we, "a weight the budget can never hold")
	assert.Equal(t, 0, inFlight(t, r, "globex"))

	a, _ := r.AcquirePermissionAsync("globex", bulkhead.CallOptions{})
	require.ErrorIs(t, a.Err(), bulkhead.ErrPending)
	require.True(t, a.Cancel())
	assert.Equal(t, 0, inFlight(t, r, "globex"), "async: withdrawn from the budget, the bulkhead's permit went back")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.AcquirePermission(ctx, "globex", bulkhead.CallOptions{})
		done <- err
	}()
	waitFor(t, func() bool { return b.Metrics().Queued == 1 }, "the blocking call to wait in the budget")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	assert.Equal(t, 0, inFlight(t, r, "globex"), "blocking: ctx ended in the budget, the bulkhead's permit went back")

	a, _ = r.AcquirePermissionAsync("globex", bulkhead.CallOptions{})
	clk.Advance(time.Minute)
	require.ErrorAs(t, a.Err(), &be)
	assert.Equal(t, bulkhead.WaitTimeout, be.Reason)
	assert.Equal(t, 0, inFlight(t, r, "globex"), "expired in the budget, the bulkhead's permit went back")
	held.FinishCall()
}

// waitFor polls cond (yielding the processor, no sleep) for up to 10 s of
// real time, for a state another goroutine reaches.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

func TestCallOptionsClassPicksTheBudgetClassAndAnUnknownOneFallsBackToThePartners(t *testing.T) {
	clk := newClock()
	b := hubBudget(t, 10, clk)
	r := newBudgetedRegistry(t, b, clk, 10, func(key string) bulkhead.PartnerOptions {
		if key == "vip" {
			return bulkhead.PartnerOptions{Class: "critical"}
		}
		return bulkhead.PartnerOptions{}
	})
	inUse := func() map[string]int {
		out := map[string]int{}
		for _, c := range b.Metrics().Classes {
			out[c.Name] = c.InUse
		}
		return out
	}
	var leases []*bulkhead.Lease
	take := func(key string, opts bulkhead.CallOptions) {
		l, err := r.TryAcquirePermission(key, opts)
		require.NoError(t, err)
		leases = append(leases, &l)
	}
	take("acme", bulkhead.CallOptions{})                                  // the budget's default: sheddable
	take("vip", bulkhead.CallOptions{})                                   // the partner's: critical
	take("acme", bulkhead.CallOptions{Class: "critical", Weight: 2})      // named
	take("vip", bulkhead.CallOptions{Class: "sheddable"})                 // named
	take("acme", bulkhead.CallOptions{Class: strings.Repeat("x", 1<<16)}) // unknown: acme's class
	take("vip", bulkhead.CallOptions{Class: "CRITICAL"})                  // unknown (names are exact): vip's class
	assert.Equal(t, map[string]int{"critical": 4, "sheddable": 3}, inUse())
	for _, l := range leases {
		l.FinishCall()
	}
	assert.Equal(t, map[string]int{"critical": 0, "sheddable": 0}, inUse(), "each Lease gave back the class it took")
}

func TestCriticalKeyedCallIsGrantedBeforeASheddableOneThatWaitedLonger(t *testing.T) {
	clk := newClock()
	b := hubBudget(t, 1, clk)
	r := newBudgetedRegistry(t, b, clk, 5, nil)
	held, err := r.TryAcquirePermission("acme", bulkhead.CallOptions{})
	require.NoError(t, err)
	shed, shedLease := r.AcquirePermissionAsync("globex", bulkhead.CallOptions{Class: "sheddable"})
	crit, critLease := r.AcquirePermissionAsync("initech", bulkhead.CallOptions{Class: "critical"})
	held.FinishCall()
	require.NoError(t, crit.Err())
	require.ErrorIs(t, shed.Err(), bulkhead.ErrPending)
	critLease.FinishCall()
	require.NoError(t, shed.Err())
	shedLease.FinishCall()
}

func TestBadBudgetInputFailsTheKeyedCallNamingIt(t *testing.T) {
	clk := newClock()
	b := hubBudget(t, 4, clk, bulkhead.GroupConfig{Name: "gold", Nominal: 2})
	r := newBudgetedRegistry(t, b, clk, 5, func(key string) bulkhead.PartnerOptions {
		return bulkhead.PartnerOptions{Group: strings.TrimPrefix(key, "g-")}
	})
	_, err := r.TryAcquirePermission("gold", bulkhead.CallOptions{Weight: -1})
	assert.EqualError(t, err, "bulkhead: Registry.TryAcquirePermission: CallOptions.Weight must not be negative, got -1")
	a, _ := r.AcquirePermissionAsync("gold", bulkhead.CallOptions{Weight: -2})
	assert.EqualError(t, a.Err(), "bulkhead: Registry.AcquirePermissionAsync: CallOptions.Weight must not be negative, got -2")
	_, err = r.AcquirePermission(context.Background(), "gold", bulkhead.CallOptions{Weight: -3})
	assert.EqualError(t, err, "bulkhead: Registry.AcquirePermission: CallOptions.Weight must not be negative, got -3")

	_, err = r.TryAcquirePermission("g-tin", bulkhead.CallOptions{})
	var ce *bulkhead.ConfigError
	require.ErrorAs(t, err, &ce, "a group the budget does not have")
	assert.Equal(t, "tin", ce.Value)
	assert.NotContains(t, names(r), "g-tin", "no bulkhead was created for it")

	l, err := r.TryAcquirePermission("g-gold", bulkhead.CallOptions{Weight: 2})
	require.NoError(t, err)
	assert.Equal(t, 2, b.Metrics().Groups[0].InUse, "the partner joined the group its func named")
	l.FinishCall()
}

func TestPartnerFuncThatPanicsOrExitsLeavesNothingHeldOrCreated(t *testing.T) {
	clk := newClock()
	b := hubBudget(t, 4, clk)
	r := newBudgetedRegistry(t, b, clk, 5, func(key string) bulkhead.PartnerOptions {
		switch key {
		case "panic":
			panic("partner func panics")
		case "exit":
			runtime.Goexit()
		}
		return bulkhead.PartnerOptions{}
	})
	assert.PanicsWithValue(t, "partner func panics", func() { r.TryAcquirePermission("panic", bulkhead.CallOptions{}) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.AcquirePermissionAsync("exit", bulkhead.CallOptions{})
	}()
	<-done
	assert.Empty(t, names(r))
	assert.Equal(t, 0, b.Metrics().Partners)
	l, err := r.TryAcquirePermission("acme", bulkhead.CallOptions{})
	require.NoError(t, err, "the registry's lock was released")
	l.FinishCall()
}

func TestEvictedBulkheadsLeaveTheBudgetSoAKeyFloodKeepsItsPartnersBounded(t *testing.T) {
	clk := newClock()
	b := hubBudget(t, 100, clk)
	const max = 50
	r := newBudgetedRegistry(t, b, clk, 3, nil, // 3: the heaviest call's weight, which each bulkhead takes too
		bulkhead.WithIdleTimeout(time.Minute), bulkhead.WithMaxBulkheads(max, partnerConfig(10)))
	assert.Equal(t, 1, b.Metrics().Partners, "the catch-all")

	held := map[string]*bulkhead.Lease{}
	for i := range 20_000 {
		key := fmt.Sprintf("attacker-%d", i)
		a, l := r.AcquirePermissionAsync(key, bulkhead.CallOptions{Class: key, Weight: 1 + i%3})
		if a.Err() == nil && i%1000 == 0 {
			held[key] = &l // a few stay in use across the sweeps
		} else if a.Err() == nil {
			l.FinishCall()
		} else if errors.Is(a.Err(), bulkhead.ErrPending) {
			require.True(t, a.Cancel())
		}
		if i%97 == 0 {
			clk.Advance(10 * time.Second)
		}
		if p := b.Metrics().Partners; p > max+1 {
			t.Fatalf("after %d keys the budget keeps %d partners, more than the registry's %d bulkheads and the catch-all", i+1, p, max)
		}
	}
	clk.Advance(2 * time.Minute)
	inUse := map[string]bool{bulkhead.CatchAllName: true}
	for _, l := range held {
		inUse[l.Name()] = true
	}
	require.Greater(t, len(inUse), 1, "some keys hold their own bulkhead")
	assert.Equal(t, len(inUse), b.Metrics().Partners, "only the bulkheads still in use, and the catch-all, keep a partner")
	assert.Equal(t, len(inUse), len(r.All()))
	for _, l := range held {
		l.FinishCall()
	}
	clk.Advance(2 * time.Minute)
	assert.Equal(t, 1, b.Metrics().Partners)

	// A key whose partner was dropped gets a new one that works.
	l, err := r.TryAcquirePermission("attacker-0", bulkhead.CallOptions{Weight: 3})
	require.NoError(t, err)
	assert.Equal(t, 3, b.Metrics().InUse)
	l.FinishCall()
}

func TestBudgetPartnerWhoseFlowARegistryDroppedMovesToANewOneAndKeepsItsGroup(t *testing.T) {
	clk := newClock()
	b := hubBudget(t, 4, clk, bulkhead.GroupConfig{Name: "gold", Nominal: 2, BorrowingLimit: 0})
	r := newBudgetedRegistry(t, b, clk, 5, func(string) bulkhead.PartnerOptions { return bulkhead.PartnerOptions{Group: "gold"} },
		bulkhead.WithIdleTimeout(time.Minute))
	// The hub's own partner of the same name shares the flow of the
	// registry's bulkhead "acme".
	own, _ := newPartner(t, b, clk, "acme", 5, bulkhead.PartnerOptions{Group: "gold"})
	l, err := r.TryAcquirePermission("acme", bulkhead.CallOptions{})
	require.NoError(t, err)
	l.FinishCall()
	clk.Advance(2 * time.Minute)
	require.Empty(t, names(r), "acme evicted")
	assert.Equal(t, 0, b.Metrics().Partners, "its idle flow dropped")

	require.NoError(t, own.AcquirePermissionAsync().Err(), "the partner whose flow was dropped")
	require.NoError(t, own.Call(bulkhead.Class{}, 1).AcquirePermissionAsync().Err())
	m := b.Metrics()
	assert.Equal(t, 1, m.Partners, "re-created")
	assert.Equal(t, 2, m.Groups[0].InUse, "in the group it joined with")

	// The registry's new bulkhead "acme" shares it again, and its limit.
	_, err = r.TryAcquirePermission("acme", bulkhead.CallOptions{})
	assert.ErrorIs(t, err, bulkhead.ErrBulkheadFull, "the group is full")
	own.FinishCall()
	l, err = r.TryAcquirePermission("acme", bulkhead.CallOptions{})
	require.NoError(t, err)
	l.FinishCall()
	own.FinishCall()

	// A flow in use is not dropped by an eviction.
	require.NoError(t, own.AcquirePermissionAsync().Err())
	l, err = r.TryAcquirePermission("acme", bulkhead.CallOptions{})
	require.NoError(t, err)
	l.FinishCall()
	clk.Advance(2 * time.Minute)
	require.Empty(t, names(r))
	assert.Equal(t, 1, b.Metrics().Partners, "kept: own holds a permit in it")
	own.FinishCall()
	assert.Equal(t, 0, b.Metrics().InUse)
}

func TestRemovedBulkheadsLeaseGivesBackToTheBudgetItTookFrom(t *testing.T) {
	clk := newClock()
	b := hubBudget(t, 4, clk)
	r := newBudgetedRegistry(t, b, clk, 5, nil)
	old, err := r.TryAcquirePermission("acme", bulkhead.CallOptions{Weight: 2})
	require.NoError(t, err)
	require.True(t, r.Remove("acme"))
	assert.Equal(t, 1, b.Metrics().Partners, "a flow in use stays")
	next, err := r.TryAcquirePermission("acme", bulkhead.CallOptions{Weight: 2})
	require.NoError(t, err, "the new bulkhead shares the flow")
	old.FinishCall()
	next.FinishCall()
	assert.Equal(t, 0, b.Metrics().InUse)
}

func TestWithBudgetNilFailsNewRegistry(t *testing.T) {
	_, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.WithBudget(nil, nil))
	assert.EqualError(t, err, "bulkhead: NewRegistry: WithBudget: budget must not be nil")
}

// TestBudgetedRegistryStressNeverExceedsEitherLevelAndLosesNoPermit hammers
// a budgeted registry with eviction and a cap: random keys, classes
// (unknown ones too) and weights, the three forms, cancellations, ctx
// ends, callbacks that re-enter the registry, and a partner of the hub's
// own sharing a key's flow. Independent counters (taken after a grant is
// seen, given back before the permits are) never exceed either level's
// limit; at the end nothing is held or queued (CheckBudget, CheckRegistry)
// and every evicted key's partner has left the budget.
func TestBudgetedRegistryStressNeverExceedsEitherLevelAndLosesNoPermit(t *testing.T) {
	clk := newClock()
	const size, partnerLimit, maxBulkheads = 8, 3, 6
	b := hubBudget(t, size, clk)
	r := newBudgetedRegistry(t, b, clk, partnerLimit, nil,
		bulkhead.WithIdleTimeout(time.Minute), bulkhead.WithMaxBulkheads(maxBulkheads, partnerConfig(partnerLimit)))
	own, _ := newPartner(t, b, clk, "k3", 2, bulkhead.PartnerOptions{})

	var budgetHeld, over atomic.Int64
	perKey := sync.Map{} // lease name -> *atomic.Int64
	take := func(l *bulkhead.Lease, k int) {
		if budgetHeld.Add(int64(k)) > size {
			over.Add(1)
		}
		v, _ := perKey.LoadOrStore(l.Name(), new(atomic.Int64))
		if v.(*atomic.Int64).Add(1) > partnerLimit {
			over.Add(1)
		}
	}
	give := func(l *bulkhead.Lease, k int) {
		budgetHeld.Add(-int64(k))
		v, _ := perKey.Load(l.Name())
		v.(*atomic.Int64).Add(-1)
		if k%2 == 0 {
			l.ReleasePermission()
		} else {
			l.FinishCall()
		}
	}
	classes := []string{"", "critical", "sheddable", "bogus"}

	stop := make(chan struct{})
	ticker := make(chan struct{})
	go func() { // the clock: expiries and sweeps
		defer close(ticker)
		for {
			select {
			case <-stop:
				return
			default:
				clk.Advance(5 * time.Second)
				runtime.Gosched()
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range 1500 {
				key := fmt.Sprintf("k%d", rng.IntN(10))
				k := 1 + rng.IntN(3)
				opts := bulkhead.CallOptions{Class: classes[rng.IntN(len(classes))], Weight: k}
				switch rng.IntN(5) {
				case 0:
					l, err := r.TryAcquirePermission(key, opts)
					if err == nil {
						take(&l, k)
						give(&l, k)
					}
				case 1:
					ctx, cancel := context.WithCancel(context.Background())
					if rng.IntN(2) == 0 {
						cancel()
					}
					go cancel()
					l, err := r.AcquirePermission(ctx, key, opts)
					if err == nil {
						take(&l, k)
						give(&l, k)
					}
				case 2:
					if a := own.Call(bulkhead.Class{}, 1).AcquirePermissionAsync(); a.Err() == nil {
						own.FinishCall()
					} else if !a.Cancel() {
						<-a.Done()
						if a.Err() == nil {
							own.FinishCall()
						}
					}
				default:
					a, l := r.AcquirePermissionAsync(key, opts)
					if rng.IntN(3) == 0 {
						// A callback that re-enters the registry.
						a.OnDone(func(error) {
							if l2, err := r.TryAcquirePermission(key, bulkhead.CallOptions{}); err == nil {
								l2.FinishCall()
							}
						})
					}
					if a.Err() == bulkhead.ErrPending && rng.IntN(2) == 0 && a.Cancel() {
						continue
					}
					select {
					case <-a.Done():
					case <-time.After(10 * time.Second):
						t.Errorf("a keyed call of %q was neither granted nor expired within 10 s", key)
						return
					}
					if a.Err() == nil {
						take(&l, k)
						give(&l, k)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-ticker
	assert.Zero(t, over.Load(), "a level held more than its limit")
	clk.Advance(5 * time.Minute)
	m := b.Metrics()
	assert.Equal(t, 0, m.InUse)
	assert.Equal(t, 0, m.Queued)
	assert.LessOrEqual(t, m.Partners, 2, "the catch-all and own's flow at most")
}

// TestCallbacksOfBudgetedKeyedCallsThatPanicExitOrReenterLoseNoPermit: the
// callbacks of keyed calls waiting in the budget panic, call
// runtime.Goexit or re-enter the registry, when the budget grants them (on
// the goroutine of the FinishCall that let them in) and when they expire
// (on the goroutine that advances the clock). Every permit of both levels
// comes back, the re-entered call's Lease holds nothing until granted, and
// every bulkhead is then evicted with its partner.
func TestCallbacksOfBudgetedKeyedCallsThatPanicExitOrReenterLoseNoPermit(t *testing.T) {
	for _, outcome := range []string{"granted", "expired"} {
		t.Run(outcome, func(t *testing.T) {
			clk := newClock()
			b := hubBudget(t, 1, clk)
			r := newBudgetedRegistry(t, b, clk, 5, nil, bulkhead.WithIdleTimeout(time.Minute))
			first, err := r.TryAcquirePermission("first", bulkhead.CallOptions{})
			require.NoError(t, err)
			reentered := make(chan *bulkhead.Lease, 1)
			var leases []*bulkhead.Lease
			var acqs []*bulkhead.Acquisition
			for i, cb := range []func(error){
				func(error) { panic("callback bug") },
				func(error) { runtime.Goexit() },
				func(error) {
					_, l := r.AcquirePermissionAsync("again", bulkhead.CallOptions{})
					reentered <- &l
				},
			} {
				a, l := r.AcquirePermissionAsync(fmt.Sprint("k", i), bulkhead.CallOptions{})
				require.ErrorIs(t, a.Err(), bulkhead.ErrPending)
				a.OnDone(cb)
				leases, acqs = append(leases, &l), append(acqs, a)
			}
			if outcome == "expired" {
				testkit.RunToEnd(func() { clk.Advance(time.Minute) })
				for _, a := range acqs {
					<-a.Done()
					require.Error(t, a.Err())
				}
				testkit.RunToEnd(first.FinishCall)
			} else {
				// Each FinishCall grants the next waiter, whose callback
				// runs on the finishing goroutine.
				testkit.RunToEnd(first.FinishCall)
				for i, l := range leases {
					<-acqs[i].Done()
					require.NoError(t, acqs[i].Err(), "waiter %d", i)
					assert.Equal(t, 1, b.Metrics().InUse)
					testkit.RunToEnd(l.FinishCall)
				}
			}
			var again *bulkhead.Lease
			select {
			case again = <-reentered:
			case <-time.After(10 * time.Second):
				t.Fatal("the re-entering callback did not run")
			}
			// It waited behind the others, and was granted by the last
			// FinishCall above (the third waiter's, or first's).
			again.FinishCall()
			assert.Equal(t, 0, b.Metrics().InUse)
			clk.Advance(2 * time.Minute)
			assert.Empty(t, names(r))
			assert.Equal(t, 0, b.Metrics().Partners)
		})
	}
}

// A keyed call of weight k takes k permits of its key's bulkhead as well as
// k of the budget, on every path (async, blocking, try), and its Lease
// gives back exactly k of each.
func TestBudgetedKeyedWeightedCallTakesItsWeightOfItsBulkhead(t *testing.T) {
	clk := newClock()
	b := hubBudget(t, 6, clk)
	r := newBudgetedRegistry(t, b, clk, 4, nil)

	heavy, err := r.TryAcquirePermission("acme", bulkhead.CallOptions{Weight: 3})
	require.NoError(t, err)
	assert.Equal(t, 3, inFlight(t, r, "acme"), "try: weight 3 at the bulkhead")
	assert.Equal(t, 3, b.Metrics().InUse)

	// 1 permit of acme's 4 is free: a call of weight 2 waits at the bulkhead,
	// the budget untouched.
	a, waiting := r.AcquirePermissionAsync("acme", bulkhead.CallOptions{Weight: 2})
	require.ErrorIs(t, a.Err(), bulkhead.ErrPending)
	assert.Equal(t, 0, b.Metrics().Queued)
	assert.Equal(t, 3, b.Metrics().InUse)

	var te *bulkhead.TooHeavyError
	_, err = r.TryAcquirePermission("acme", bulkhead.CallOptions{Weight: 5})
	require.ErrorAs(t, err, &te, "try: heavier than the bulkhead")
	assert.Equal(t, 4, te.Limit)
	a5, _ := r.AcquirePermissionAsync("acme", bulkhead.CallOptions{Weight: 5})
	require.ErrorAs(t, a5.Err(), &te, "async: heavier than the bulkhead")
	_, err = r.AcquirePermission(context.Background(), "acme", bulkhead.CallOptions{Weight: 5})
	require.ErrorAs(t, err, &te, "blocking: heavier than the bulkhead")
	assert.Equal(t, 3, inFlight(t, r, "acme"), "the rejections took nothing")
	assert.Equal(t, 3, b.Metrics().InUse)

	heavy.FinishCall()
	require.NoError(t, a.Err(), "granted by both levels once heavy's 3 came back")
	assert.Equal(t, 2, inFlight(t, r, "acme"))
	assert.Equal(t, 2, b.Metrics().InUse)
	waiting.ReleasePermission()
	assert.Equal(t, 0, inFlight(t, r, "acme"))
	assert.Equal(t, 0, b.Metrics().InUse)

	// Blocking, granted at once by both levels; then rejected by the budget
	// after the bulkhead granted: its 4 go back.
	l, err := r.AcquirePermission(context.Background(), "acme", bulkhead.CallOptions{Weight: 4})
	require.NoError(t, err)
	assert.Equal(t, 4, inFlight(t, r, "acme"))
	l.FinishCall()
	held, err := r.TryAcquirePermission("globex", bulkhead.CallOptions{Weight: 4})
	require.NoError(t, err)
	_, err = r.TryAcquirePermission("acme", bulkhead.CallOptions{Weight: 4})
	var be *bulkhead.BudgetError
	require.ErrorAs(t, err, &be, "try: 2 budget permits free")
	assert.Equal(t, 0, inFlight(t, r, "acme"), "try: the bulkhead's 4 went back")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.AcquirePermission(ctx, "acme", bulkhead.CallOptions{Weight: 4})
		done <- err
	}()
	waitFor(t, func() bool { return b.Metrics().Queued == 1 }, "the blocking call to wait in the budget")
	assert.Equal(t, 4, inFlight(t, r, "acme"), "it holds its bulkhead's 4 while it waits in the budget")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	assert.Equal(t, 0, inFlight(t, r, "acme"), "blocking: ctx ended in the budget, the bulkhead's 4 went back")
	held.FinishCall()
}

// The keyed calls of a budgeted registry fail as their docs now say: with
// the budget's *BudgetError or *WeightError, the bulkhead's *TooHeavyError,
// or an error naming a negative weight, each with the zero Lease and
// holding nothing at either level (held: the docs of AcquirePermission and
// TryAcquirePermission named only the Semaphore's errors).
func TestBudgetedRegistryKeyedCallsFailWithTheBudgetsErrorsHoldingNothing(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(2, 0, class("critical", 0, 0), bulkhead.ClassConfig{Name: "sheddable"})
	cfg.MaxQueuedCalls = bulkhead.Unbounded
	b := newBudget(t, cfg, clk)
	r := newBudgetedRegistry(t, b, clk, 4, nil)
	holder, err := r.TryAcquirePermission("walmart", bulkhead.CallOptions{Weight: 2})
	require.NoError(t, err)
	ctx := context.Background()
	for _, tc := range []struct {
		opts bulkhead.CallOptions
		is   error
		want string
	}{
		{bulkhead.CallOptions{}, bulkhead.ErrBulkheadFull, `class "sheddable" full`},
		{bulkhead.CallOptions{Weight: 3}, bulkhead.ErrTooHeavy, `heavier than the 2 permits the budget can grant it`},
		{bulkhead.CallOptions{Weight: 5}, bulkhead.ErrTooHeavy, `weight 5`},
		{bulkhead.CallOptions{Weight: -1}, nil, `CallOptions.Weight must not be negative, got -1`},
	} {
		for _, how := range []string{"AcquirePermission", "TryAcquirePermission"} {
			var (
				l   bulkhead.Lease
				err error
			)
			if how == "AcquirePermission" {
				l, err = r.AcquirePermission(ctx, "acme", tc.opts)
			} else {
				l, err = r.TryAcquirePermission("acme", tc.opts)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("%s(%+v): %v, want an error containing %q", how, tc.opts, err, tc.want)
			}
			if l.Name() != "" {
				t.Errorf("%s(%+v): a Lease of %q with the error", how, tc.opts, l.Name())
			}
			acme, _ := r.Find("acme")
			if m, bm := acme.Metrics(), b.Metrics(); m.InFlightCalls != 0 || bm.InUse != 2 {
				t.Errorf("%s(%+v): acme holds %d, the budget %d; want 0 and the holder's 2", how, tc.opts, m.InFlightCalls, bm.InUse)
			}
		}
	}
	holder.FinishCall()
}
