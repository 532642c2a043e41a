package otel_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/rxbulkhead/bulkhead"
	bulkheadotel "github.com/rxbulkhead/bulkhead/contrib/otel"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newRegistry(t *testing.T, defaults bulkhead.Config) *bulkhead.Registry {
	t.Helper()
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := bulkhead.NewRegistry(defaults, bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	if err != nil {
		panic(err)
	}
	testkit.CheckRegistry(t, r)
	return r
}

func mustBulkhead(t *testing.T, r *bulkhead.Registry, name string) *bulkhead.Semaphore {
	t.Helper()
	s, err := r.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// start wires Instruments to a manual reader and returns a func that
// collects and flattens every data point to "instrument{attrs}" -> value.
// The func reports problems with t.Errorf, so any goroutine may call it.
func start(t *testing.T, r *bulkhead.Registry) (*bulkheadotel.Instruments, func() map[string]int64) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	in, err := bulkheadotel.Start(r, bulkheadotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in, func() map[string]int64 {
		t.Helper()
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Errorf("Collect: %v", err)
		}
		out := map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			if sm.Scope.Name != bulkheadotel.ScopeName {
				t.Errorf("scope %q, want %q", sm.Scope.Name, bulkheadotel.ScopeName)
			}
			for _, m := range sm.Metrics {
				if m.Name == "bulkhead.wait.duration" || m.Name == "bulkhead.call.duration" || m.Name == "bulkhead.rejected_calls" || m.Name == "bulkhead.shadowed_calls" {
					continue // waits_test.go checks them
				}
				if m.Unit != "{call}" && !(m.Unit == "{bulkhead}" && strings.HasPrefix(m.Name, "bulkhead.registry.")) {
					t.Errorf("%s has unit %q, want {call}", m.Name, m.Unit)
				}
				var points []metricdata.DataPoint[int64]
				switch d := m.Data.(type) {
				case metricdata.Gauge[int64]:
					points = d.DataPoints
				case metricdata.Sum[int64]:
					if !d.IsMonotonic || d.Temporality != metricdata.CumulativeTemporality {
						t.Errorf("%s is not a cumulative monotonic sum", m.Name)
					}
					points = d.DataPoints
				default:
					t.Errorf("%s has data %T", m.Name, m.Data)
				}
				for _, p := range points {
					out[m.Name+"{"+attrs(p.Attributes)+"}"] = p.Value
				}
			}
		}
		return out
	}
}

func attrs(s attribute.Set) string {
	var parts []string
	for _, kv := range s.ToSlice() {
		parts = append(parts, string(kv.Key)+"="+kv.Value.String())
	}
	return strings.Join(parts, ",")
}

// points renders the expected data points of one bulkhead.
func points(name string, available, maxAllowed, queued, maxQueued, permitted, rejected, finished, cancelled int64) map[string]int64 {
	n := "name=" + name
	return map[string]int64{
		"bulkhead.available_concurrent_calls{" + n + "}":   available,
		"bulkhead.max_allowed_concurrent_calls{" + n + "}": maxAllowed,
		"bulkhead.queued_calls{" + n + "}":                 queued,
		"bulkhead.max_queued_calls{" + n + "}":             maxQueued,
		"bulkhead.calls{kind=permitted," + n + "}":         permitted,
		"bulkhead.calls{kind=rejected," + n + "}":          rejected,
		"bulkhead.calls{kind=finished," + n + "}":          finished,
		"bulkhead.calls{kind=cancelled," + n + "}":         cancelled,
	}
}

func union(ms ...map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// check compares the per-bulkhead data points (the registry's own,
// bulkhead.registry.*, are checked by the eviction test).
func check(t *testing.T, got, want map[string]int64) {
	t.Helper()
	maps.DeleteFunc(got, func(k string, _ int64) bool { return strings.HasPrefix(k, "bulkhead.registry.") })
	if !maps.Equal(got, want) {
		t.Fatalf("data points:\n got %v\nwant %v", sorted(got), sorted(want))
	}
}

func sorted(m map[string]int64) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "\n  %s %d", k, m[k])
	}
	return b.String()
}

func TestInstrumentsReportGaugesAndCountEveryKind(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1})
	s := mustBulkhead(t, r, "walmart")
	_, collect := start(t, r)

	s.TryAcquirePermission()
	s.TryAcquirePermission()
	queued := s.AcquirePermissionAsync()
	s.AcquirePermissionAsync() // rejected: queue full
	check(t, collect(), points("walmart", 0, 2, 1, 1, 2, 1, 0, 0))

	queued.Cancel()
	s.FinishCall()
	s.ReleasePermission()
	check(t, collect(), points("walmart", 2, 2, 0, 1, 2, 1, 1, 1))
}

func TestInstrumentsCountBulkheadCreatedLaterFromItsFirstEvent(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	_, collect := start(t, r)
	check(t, collect(), map[string]int64{})

	late := mustBulkhead(t, r, "late")
	late.TryAcquirePermission() // before any collection sees "late": counted all the same
	late.TryAcquirePermission()
	late.FinishCall()
	check(t, collect(), points("late", 1, 1, 0, 0, 1, 1, 1, 0))

	late.TryAcquirePermission()
	late.FinishCall()
	mustBulkhead(t, r, "other")
	check(t, collect(), union(points("late", 1, 1, 0, 0, 2, 1, 2, 0), points("other", 1, 1, 0, 0, 0, 0, 0, 0)))
}

func TestInstrumentsForgetRemovedBulkheadsAndContinueTheirName(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	old := mustBulkhead(t, r, "p")
	other := mustBulkhead(t, r, "other")
	_, collect := start(t, r)
	old.TryAcquirePermission()
	old.FinishCall()

	r.Remove("p")
	other.TryAcquirePermission()
	other.FinishCall()
	old.TryAcquirePermission() // not observed any more
	old.FinishCall()
	check(t, collect(), points("other", 1, 1, 0, 0, 1, 0, 1, 0))

	// A new bulkhead under the removed name continues its cumulative count.
	renewed := mustBulkhead(t, r, "p")
	renewed.TryAcquirePermission()
	renewed.FinishCall()
	check(t, collect(), union(points("p", 1, 1, 0, 0, 2, 0, 2, 0), points("other", 1, 1, 0, 0, 1, 0, 1, 0)))
}

func TestCloseStopsReporting(t *testing.T) {
	r := newRegistry(t, bulkhead.DefaultConfig())
	s := mustBulkhead(t, r, "p")
	in, collect := start(t, r)
	check(t, collect(), points("p", 25, 25, 0, math.MaxInt, 0, 0, 0, 0))
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if err := in.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	s.TryAcquirePermission()
	s.FinishCall()
	check(t, collect(), map[string]int64{})
}

func TestStartPanicsOnNilRegistry(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Start(nil) did not panic")
		}
	}()
	_, _ = bulkheadotel.Start(nil)
}

// TestConcurrentCollectionsCountEveryEvent races collections, registry
// churn and traffic on a bulkhead that existed before Start ("steady") and
// on one that the workers create after it ("late"): every event of both
// must be counted exactly once.
func TestConcurrentCollectionsCountEveryEvent(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2})
	mustBulkhead(t, r, "steady")
	_, collect := start(t, r)

	const workers, iterations = 4, 2000
	var wg sync.WaitGroup
	var mu sync.Mutex
	permitted, rejected := map[string]int64{}, map[string]int64{}
	for w := range workers {
		wg.Go(func() {
			name := []string{"steady", "late"}[w%2]
			s, err := r.Get(name) // "late" is created here, racing
			if err != nil {
				t.Error(err)
				return
			}
			var p, rj int64
			for range iterations {
				if s.TryAcquirePermission() {
					p++
					s.FinishCall()
				} else {
					rj++
				}
			}
			mu.Lock()
			permitted[name] += p
			rejected[name] += rj
			mu.Unlock()
		})
	}
	wg.Go(func() {
		for i := range 200 {
			name := fmt.Sprintf("churn-%d", i%5)
			if b, err := r.Get(name); err == nil && b.TryAcquirePermission() {
				b.FinishCall()
			}
			if i%3 == 0 {
				r.Remove(name)
			}
		}
	})
	for range 2 { // collections race with each other too
		wg.Go(func() {
			for range 25 {
				collect()
			}
		})
	}
	wg.Wait()

	got := collect()
	if total := permitted["steady"] + rejected["steady"] + permitted["late"] + rejected["late"]; total != workers*iterations {
		t.Fatalf("workers saw %d outcomes, want %d", total, workers*iterations)
	}
	for _, name := range []string{"steady", "late"} {
		for kind, want := range map[string]int64{"permitted": permitted[name], "finished": permitted[name], "rejected": rejected[name], "cancelled": 0} {
			if v := got["bulkhead.calls{kind="+kind+",name="+name+"}"]; v != want {
				t.Errorf("%s: %s = %d, want %d", name, kind, v, want)
			}
		}
	}
}

func TestInstrumentsDropEvictedBulkheadsAndCountRegistryEvents(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)),
		bulkhead.WithIdleTimeout(time.Second), bulkhead.WithMaxBulkheads(1, bulkhead.Config{MaxConcurrentCalls: 1}))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	_, collect := start(t, r)
	a, l := r.AcquirePermissionAsync("tenant-1", bulkhead.CallOptions{})
	if a.Err() != nil {
		t.Fatal(a.Err())
	}
	a2, l2 := r.AcquirePermissionAsync("tenant-2", bulkhead.CallOptions{}) // beyond the cap
	if a2.Err() != nil || l2.Name() != bulkhead.CatchAllName {
		t.Fatalf("tenant-2: %v via %q, want a grant by the catch-all", a2.Err(), l2.Name())
	}
	l.FinishCall()
	l2.FinishCall()
	got := collect()
	if got["bulkhead.registry.bulkheads{}"] != 2 || got["bulkhead.registry.catch_all_calls{}"] != 1 ||
		got["bulkhead.calls{kind=finished,name=tenant-1}"] != 1 {
		t.Fatalf("before the eviction:%s", sorted(got))
	}
	clock.Advance(2 * time.Second)
	got = collect()
	for k := range got {
		if strings.Contains(k, "tenant-1") {
			t.Fatalf("the evicted bulkhead is still observed: %s", k)
		}
	}
	if got["bulkhead.registry.bulkheads{}"] != 1 || got["bulkhead.registry.evictions{}"] != 1 {
		t.Fatalf("after the eviction:%s", sorted(got))
	}
	a, l = r.AcquirePermissionAsync("tenant-1", bulkhead.CallOptions{})
	if a.Err() != nil {
		t.Fatal(a.Err())
	}
	l.FinishCall()
	if got := collect()["bulkhead.calls{kind=finished,name=tenant-1}"]; got != 1 {
		t.Fatalf("a re-created bulkhead counts %d finished calls, want 1 (from zero)", got)
	}
}
