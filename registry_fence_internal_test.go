package bulkhead

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

// The keyed registry's fence on the permit word, pinned interleaving by
// interleaving (see Registry's invariants and docs/design.md, "The permit
// word"). A keyed call granted at once takes its permit by a CAS on the
// bulkhead's word, with no lock, and then loads its entry's dead mark
// (Catalog.Kept); the sweep CASes that mark and then loads the word
// (busy). These tests stop a call between its lookup and its take (the
// test hook keyedFoundHook; a budgeted call reaches it once it found the
// bulkhead's partner, after the lookup) and run the sweep's decision there or around the take. They fail if the
// call's side of the fence is removed (no Kept check after the take: the
// first test) or reordered (the check before the take: the second), or if
// the sweep asks keep before it marks the entry dead (the second).

// fenceCall is one keyed entry point; it returns the Lease of a permit
// granted at once.
type fenceCall struct {
	name string
	call func(r *Registry, key string) (Lease, error)
}

var fenceCalls = []fenceCall{
	{"TryAcquirePermission", func(r *Registry, key string) (Lease, error) {
		return r.TryAcquirePermission(key, CallOptions{})
	}},
	{"AcquirePermissionAsync", func(r *Registry, key string) (Lease, error) {
		a, l := r.AcquirePermissionAsync(key, CallOptions{})
		return l, a.Err()
	}},
	{"AcquirePermission", func(r *Registry, key string) (Lease, error) {
		return r.AcquirePermission(context.Background(), key, CallOptions{})
	}},
}

// fenceRegistry is a registry with idle timeout idle whose bulkheads have
// one permit; budgeted, it is joined to a budget of 4 permits, which it
// returns too.
func fenceRegistry(t *testing.T, budgeted bool, idle time.Duration) (*Registry, *Budget) {
	t.Helper()
	opts := []RegistryOption{WithIdleTimeout(idle)}
	var b *Budget
	if budgeted {
		var err error
		b, err = NewBudget("hub", BudgetConfig{Size: 4, MaxQueuedCalls: Unbounded,
			Classes: []ClassConfig{{Name: "only", MaxWaitDuration: time.Minute, MaxQueuedCalls: Unbounded}}})
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, WithBudget(b, nil))
	}
	r, err := NewRegistry(Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: Unbounded}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	// k's bulkhead, used once and idle since.
	l, err := r.TryAcquirePermission("k", CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.FinishCall()
	return r, b
}

// betweenLookupAndTake sets keyedFoundHook to run f once, on the calling
// goroutine, when a keyed call for "k" has found its bulkhead (and, in a
// budgeted registry, its partner) and has not acted on it yet. The hook
// is reset when the test ends.
func betweenLookupAndTake(t *testing.T, f func()) {
	done := false
	keyedFoundHook = func(s *Semaphore) {
		if s.Name() == "k" && !done {
			done = true
			f()
		}
	}
	t.Cleanup(func() { keyedFoundHook = nil })
}

func fenceVariants(t *testing.T, test func(t *testing.T, budgeted bool, c fenceCall)) {
	for _, budgeted := range []bool{false, true} {
		kind := "plain"
		if budgeted {
			kind = "budgeted"
		}
		for _, c := range fenceCalls {
			t.Run(kind+"/"+c.name, func(t *testing.T) { test(t, budgeted, c) })
		}
	}
}

// TestKeyedCallThatFoundTheBulkheadBeforeItsEvictionAndTookAfterGoesToTheNewOne:
// the call finds k's bulkhead, then the sweep evicts it (its word said
// idle: nothing held yet), then the call takes the evicted bulkhead's
// free permit. Its load of the dead mark after the take must see the
// eviction: it gives the permit back and takes one of k's new bulkhead, so
// k never has two bulkheads admitting (without the check, the call would
// run on a bulkhead nobody else can see).
func TestKeyedCallThatFoundTheBulkheadBeforeItsEvictionAndTookAfterGoesToTheNewOne(t *testing.T) {
	fenceVariants(t, func(t *testing.T, budgeted bool, c fenceCall) {
		synctest.Test(t, func(t *testing.T) {
			r, b := fenceRegistry(t, budgeted, time.Second)
			old := r.cat.Lookup("k")
			betweenLookupAndTake(t, func() {
				time.Sleep(3 * time.Second) // idle for more than the timeout: the sweep evicts k
				if r.cat.Lookup("k") != nil {
					t.Fatal("k's bulkhead was not evicted while the call stood between its lookup and its take")
				}
			})
			l, err := c.call(r, "k")
			if err != nil {
				t.Fatalf("the call failed: %v", err)
			}
			now := r.cat.Lookup("k")
			switch {
			case now == nil:
				t.Fatal("k has no bulkhead after the call: the call did not make the new one")
			case now == old:
				t.Fatal("the evicted entry is back")
			case l.e != now:
				t.Fatal("the call's Lease is on the evicted bulkhead, not on k's new one")
			}
			if n := old.Item().Metrics().InFlightCalls; n != 0 {
				t.Errorf("the evicted bulkhead holds %d permits: the call kept the permit it took there", n)
			}
			if n := now.Item().Metrics().InFlightCalls; n != 1 {
				t.Errorf("k's new bulkhead holds %d permits, want the call's 1", n)
			}
			if b != nil {
				if n := b.Metrics().InUse; n != 1 {
					t.Errorf("the budget has %d permits in use, want the call's 1", n)
				}
			}
			l.FinishCall()
			if n := now.Item().Metrics().InFlightCalls; n != 0 {
				t.Errorf("k's new bulkhead holds %d permits after FinishCall", n)
			}
			if b != nil {
				if n := b.Metrics().InUse; n != 0 {
					t.Errorf("the budget has %d permits in use after FinishCall", n)
				}
			}
		})
	})
}

// TestSweepThatMarkedTheBulkheadDeadBeforeAKeyedTakeSeesItAndKeepsTheBulkhead:
// the call finds k's bulkhead; the sweep marks its entry dead; the call
// takes the permit (no lock: a CAS on the word) before the sweep loads the
// word. The sweep must see the permit held and keep the bulkhead, and the
// call, whose load of the dead mark finds it dead or alive again, must
// stay on it. The sweep runs on the test goroutine (Catalog.Sweep, as the
// registry's timer calls it, with a keep func that lets the call go and
// waits for its take before it asks busy); no synctest bubble, because
// the call then waits for the catalog's lock, which is not a durable
// block. The waits are bounded: they end early only if the test fails.
func TestSweepThatMarkedTheBulkheadDeadBeforeAKeyedTakeSeesItAndKeepsTheBulkhead(t *testing.T) {
	fenceVariants(t, func(t *testing.T, budgeted bool, c fenceCall) {
		const bound = 5 * time.Second
		r, b := fenceRegistry(t, budgeted, time.Hour) // the registry's own sweep never runs here
		e := r.cat.Lookup("k")
		s := e.Item()
		found, proceed := make(chan struct{}), make(chan struct{})
		betweenLookupAndTake(t, func() {
			close(found)
			<-proceed
		})
		type result struct {
			l   Lease
			err error
		}
		res := make(chan result, 1)
		go func() {
			l, err := c.call(r, "k")
			res <- result{l, err}
		}()
		select {
		case <-found:
		case <-time.After(bound):
			t.Fatal("the call did not reach its bulkhead")
		}
		decided := false
		keep := func(x *Semaphore) bool {
			decided = true
			if x != s {
				t.Errorf("the sweep decided about %q, not k", x.Name())
				return busy(x)
			}
			if !e.Dead() {
				t.Error("the sweep asks keep before it marked the entry dead")
			}
			close(proceed)
			deadline := time.Now().Add(bound)
			for heldOf(s.state.Load()) == 0 {
				if time.Now().After(deadline) {
					t.Error("the call did not take its permit while the sweep decided (does it check the dead mark before its take?)")
					break
				}
				runtime.Gosched()
			}
			return busy(x)
		}
		// k was last used at tick 0: the sweep of tick idleTicks+1 is the
		// first to find it idle.
		for i := 0; i <= idleTicks && !decided; i++ {
			r.cat.Sweep(idleTicks, keep, r.evictedLocked)
		}
		if !decided {
			t.Fatal("no sweep found k idle")
		}
		var got result
		select {
		case got = <-res:
		case <-time.After(bound):
			t.Fatal("the call did not return")
		}
		if got.err != nil {
			t.Fatalf("the call failed: %v", got.err)
		}
		if r.cat.Lookup("k") != e || r.cat.Evictions() != 0 {
			t.Fatal("the sweep evicted k's bulkhead while the call held its permit")
		}
		if got.l.e != e {
			t.Fatal("the call's Lease is not on k's bulkhead")
		}
		if n := s.Metrics().InFlightCalls; n != 1 {
			t.Errorf("k's bulkhead holds %d permits, want the call's 1", n)
		}
		if b != nil {
			if n := b.Metrics().InUse; n != 1 {
				t.Errorf("the budget has %d permits in use, want the call's 1", n)
			}
		}
		got.l.FinishCall()
		if n := s.Metrics().InFlightCalls; n != 0 {
			t.Errorf("k's bulkhead holds %d permits after FinishCall", n)
		}
	})
}
