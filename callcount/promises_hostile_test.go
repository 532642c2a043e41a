package callcount_test

// Hostile readings of the package's doc promises: each test quotes the
// promise it tries, and tries it at an edge (an eviction after Close, a
// bulkhead in shadow mode at its limit, the pools of a pool.Registry
// removed or evicted).

import (
	"context"
	"iter"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/callcount"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Counts: "After Close, Counts returns the counts as they were then." The
// counter forgets a name when the source evicts its bulkhead; once closed it
// must not forget anything either, eviction or not.
func TestHostileAnEvictionAfterCloseForgetsNothing(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)), bulkhead.WithIdleTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	c := callcount.New(r)
	l, err := r.TryAcquirePermission("tenant", bulkhead.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.FinishCall()
	c.Close()
	clock.Advance(2 * time.Second)
	if st := r.Stats(); st.Evictions != 1 {
		t.Fatalf("%+v: want the tenant's bulkhead evicted", st)
	}
	wantCounts(t, c, "tenant", callcount.Counts{Permitted: 1, Finished: 1})
}

// Counts "are the numbers of events a bulkhead published, by type": four
// types. A bulkhead in shadow mode lets the call over its limit through
// (CallShadowed, then CallPermitted): it is counted permitted, never
// rejected, and the shadow event itself is no count.
func TestHostileAShadowedCallIsCountedPermittedNotRejected(t *testing.T) {
	r, c := newCountedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, ShadowMode: true})
	s := mustRegistryBulkhead(t, r, "shadow")
	events := testkit.RecordEvents(t, s)
	for range 2 {
		if !s.TryAcquirePermission() {
			t.Fatal("shadow mode refused a call")
		}
	}
	s.FinishCall()
	s.FinishCall()
	if events.Count(bulkhead.CallShadowed) != 1 {
		t.Fatalf("events %v, want one shadowed call", events.Strings())
	}
	wantCounts(t, c, "shadow", callcount.Counts{Permitted: 2, Finished: 2})
}

// Counter: "A bulkhead removed from the registry is no longer counted ...
// and its counts stay as they were; a bulkhead created again under that
// name continues them", and "until the source evicts that name's bulkhead
// as idle ...: then its counts are forgotten, and a bulkhead created again
// under that name counts from zero". The doc names a pool.Registry's
// MetricsSource as a source: both rules must hold for its pools too.
func TestHostileThePoolsOfAPoolRegistryAreForgottenOnEvictionAndContinuedAfterRemove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := pool.NewRegistry(pool.Config{MaxWorkers: 1}, pool.WithIdleTimeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close(context.Background()) })
		c := callcount.New(r.MetricsSource())
		defer c.Close()
		run := func(p *pool.Pool) {
			t.Helper()
			if _, err := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 0, nil }).Get(context.Background()); err != nil {
				t.Fatal(err)
			}
			synctest.Wait() // the worker has delivered and retired
		}
		keyed := func() {
			t.Helper()
			if _, err := pool.SubmitKeyed(context.Background(), r, "tenant", pool.CallOptions{}, func(context.Context) (int, error) { return 0, nil }).Get(context.Background()); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}

		keyed()
		wantCounts(t, c, "tenant", callcount.Counts{Permitted: 1, Finished: 1})
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if st := r.Stats(); st.Evictions != 1 {
			t.Fatalf("%+v: want the tenant's pool evicted", st)
		}
		wantCounts(t, c, "tenant", callcount.Counts{})
		keyed()
		wantCounts(t, c, "tenant", callcount.Counts{Permitted: 1, Finished: 1})

		old, err := r.Get("resizer")
		if err != nil {
			t.Fatal(err)
		}
		run(old)
		if !r.Remove("resizer") {
			t.Fatal("Remove found no pool")
		}
		run(old) // a holder goes on using the removed pool: no longer counted
		wantCounts(t, c, "resizer", callcount.Counts{Permitted: 1, Finished: 1})
		again, err := r.Get("resizer")
		if err != nil {
			t.Fatal(err)
		}
		run(again)
		wantCounts(t, c, "resizer", callcount.Counts{Permitted: 2, Finished: 2})
		if err := old.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// fleetLike is a MetricsSource of pointer type other than
// *bulkhead.Registry (as the fleet's *Registry of contrib/redis is): its
// methods use the registry it wraps.
type fleetLike struct{ r *bulkhead.Registry }

func (f *fleetLike) OnEvent(fn func(bulkhead.Event)) (remove func()) { return f.r.OnEvent(fn) }
func (f *fleetLike) OnEvict(fn func(string)) (remove func())         { return f.r.OnEvict(fn) }
func (f *fleetLike) Stats() bulkhead.RegistryStats                   { return f.r.Stats() }
func (f *fleetLike) AllMetrics() iter.Seq2[string, bulkhead.Metrics] { return f.r.AllMetrics() }

// New: "It panics if src is nil", with the message the nil interface and a
// nil *bulkhead.Registry get. A nil pointer of any other source type (the
// fleet's *Registry) is nil too, as the exporters (contrib/prometheus,
// contrib/otel) treat it: the same panic, at New, not a nil dereference
// inside one of its methods.
func TestHostileNewPanicsOnANilPointerOfAnySourceType(t *testing.T) {
	var nilFleet *fleetLike
	defer func() {
		if r := recover(); r != "callcount: New called with a nil bulkhead.MetricsSource" {
			t.Fatalf("New(nil *fleetLike) recovered %v, want the nil-source panic", r)
		}
	}()
	callcount.New(nilFleet)
}
