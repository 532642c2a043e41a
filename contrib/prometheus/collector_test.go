package prometheus_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/rxbulkhead/bulkhead"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newRegistry returns a registry on a virtual clock whose bulkheads are
// checked for leaked permits at the end of the test.
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

// exposition renders the expected text of one bulkhead.
func exposition(name string, available, maxAllowed, queued, maxQueued int, permitted, rejected, finished, cancelled int) string {
	return fmt.Sprintf(`
bulkhead_available_concurrent_calls{name=%[1]q} %[2]d
bulkhead_max_allowed_concurrent_calls{name=%[1]q} %[3]d
bulkhead_queued_calls{name=%[1]q} %[4]d
bulkhead_max_queued_calls{name=%[1]q} %[5]d
bulkhead_calls_total{kind="cancelled",name=%[1]q} %[9]d
bulkhead_calls_total{kind="finished",name=%[1]q} %[8]d
bulkhead_calls_total{kind="permitted",name=%[1]q} %[6]d
bulkhead_calls_total{kind="rejected",name=%[1]q} %[7]d
`, name, available, maxAllowed, queued, maxQueued, permitted, rejected, finished, cancelled)
}

const header = `
# HELP bulkhead_available_concurrent_calls Number of free permits of the bulkhead.
# TYPE bulkhead_available_concurrent_calls gauge
# HELP bulkhead_max_allowed_concurrent_calls Configured number of permits of the bulkhead (MaxConcurrentCalls).
# TYPE bulkhead_max_allowed_concurrent_calls gauge
# HELP bulkhead_queued_calls Number of calls waiting for a permit.
# TYPE bulkhead_queued_calls gauge
# HELP bulkhead_max_queued_calls Configured bound of the wait queue (MaxQueuedCalls); 0 means no queue, bulkhead.Unbounded (MaxInt) no bound.
# TYPE bulkhead_max_queued_calls gauge
# HELP bulkhead_calls_total Calls of the bulkhead by kind (permitted, rejected, finished, cancelled), counted since the collector was created.
# TYPE bulkhead_calls_total counter
`

// bulkheadMetrics are the per-bulkhead metrics compare checks (registry.go
// tests the registry's own).
var bulkheadMetrics = []string{"bulkhead_available_concurrent_calls", "bulkhead_max_allowed_concurrent_calls",
	"bulkhead_queued_calls", "bulkhead_max_queued_calls", "bulkhead_calls_total"}

func compare(t *testing.T, c prometheus.Collector, want string) {
	t.Helper()
	if err := testutil.CollectAndCompare(c, strings.NewReader(header+want), bulkheadMetrics...); err != nil {
		t.Fatal(err)
	}
}

func TestCollectorReportsGaugesAndCountsEveryKind(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1})
	s := mustBulkhead(t, r, "walmart")
	c := bulkheadprom.NewCollector(r)
	defer c.Close()

	s.TryAcquirePermission()             // permitted
	s.TryAcquirePermission()             // permitted
	queued := s.AcquirePermissionAsync() // queued
	s.AcquirePermissionAsync()           // rejected: queue full
	compare(t, c, exposition("walmart", 0, 2, 1, 1, 2, 1, 0, 0))

	queued.Cancel()       // cancelled
	s.FinishCall()        // finished
	s.ReleasePermission() // released unused: no event
	compare(t, c, exposition("walmart", 2, 2, 0, 1, 2, 1, 1, 1))
}

func TestCollectorCountsBulkheadCreatedLaterFromItsFirstEvent(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	c := bulkheadprom.NewCollector(r)
	defer c.Close()
	if n := testutil.CollectAndCount(c, bulkheadMetrics...); n != 0 {
		t.Fatalf("an empty registry gave %d bulkhead metrics", n)
	}

	late := mustBulkhead(t, r, "late")
	late.TryAcquirePermission() // before any scrape sees "late": counted all the same
	late.TryAcquirePermission()
	late.FinishCall()
	compare(t, c, exposition("late", 1, 1, 0, 0, 1, 1, 1, 0))

	late.TryAcquirePermission()
	late.FinishCall()
	compare(t, c, exposition("late", 1, 1, 0, 0, 2, 1, 2, 0))
}

func TestCollectorForgetsRemovedBulkheadsAndContinuesTheirName(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	old := mustBulkhead(t, r, "p")
	mustBulkhead(t, r, "q")
	c := bulkheadprom.NewCollector(r)
	defer c.Close()
	old.TryAcquirePermission()
	old.FinishCall()
	if n := testutil.CollectAndCount(c); n != 35 {
		t.Fatalf("two bulkheads gave %d metrics, want 2*16 and the registry's 3", n)
	}

	r.Remove("p")
	compare(t, c, exposition("q", 1, 1, 0, 0, 0, 0, 0, 0))

	// The removed bulkhead is no longer counted; a new one under its name
	// continues the name's counters, so the series never goes down.
	renewed := mustBulkhead(t, r, "p")
	old.TryAcquirePermission()
	old.FinishCall()
	compare(t, c, exposition("p", 1, 1, 0, 0, 1, 0, 1, 0)+exposition("q", 1, 1, 0, 0, 0, 0, 0, 0))
	renewed.TryAcquirePermission()
	renewed.FinishCall()
	compare(t, c, exposition("p", 1, 1, 0, 0, 2, 0, 2, 0)+exposition("q", 1, 1, 0, 0, 0, 0, 0, 0))
}

func TestCloseStopsCountingAndKeepsGauges(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	s := mustBulkhead(t, r, "p")
	c := bulkheadprom.NewCollector(r)
	s.TryAcquirePermission()
	c.Close()
	c.Close() // idempotent
	s.FinishCall()
	want := `
# HELP bulkhead_available_concurrent_calls Number of free permits of the bulkhead.
# TYPE bulkhead_available_concurrent_calls gauge
bulkhead_available_concurrent_calls{name="p"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "bulkhead_available_concurrent_calls"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "bulkhead_calls_total"); n != 0 {
		t.Fatalf("after Close %d counters were reported, want none", n)
	}
}

func TestCollectorRegistersAndPassesLint(t *testing.T) {
	r := newRegistry(t, bulkhead.DefaultConfig())
	mustBulkhead(t, r, "walmart")
	c := bulkheadprom.NewCollector(r)
	defer c.Close()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("Gather: %v", err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil || len(problems) != 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

func TestNewCollectorPanicsOnANilSource(t *testing.T) {
	var nilRegistry *bulkhead.Registry
	for _, src := range []bulkhead.MetricsSource{nil, nilRegistry} {
		func() {
			defer func() {
				if r := recover(); r != "bulkhead/contrib/prometheus: NewCollector called with a nil bulkhead.MetricsSource" {
					t.Fatalf("NewCollector(%#v) recovered %v", src, r)
				}
			}()
			bulkheadprom.NewCollector(src)
		}()
	}
	defer func() {
		if r := recover(); r != "bulkhead/contrib/prometheus: WithSources called with a nil bulkhead.MetricsSource at index 0" {
			t.Fatalf("WithSources(nil) recovered %v", r)
		}
	}()
	bulkheadprom.NewCollector(newRegistry(t, bulkhead.DefaultConfig()), bulkheadprom.WithSources(nil))
}

// TestConcurrentScrapesCountEveryEvent hammers the collector: scrapes,
// bulkhead creation and removal race with traffic on a bulkhead that existed
// before the collector ("steady") and on one that the workers create after
// it ("late"). Every event of both must be counted exactly once.
func TestConcurrentScrapesCountEveryEvent(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2})
	mustBulkhead(t, r, "steady")
	c := bulkheadprom.NewCollector(r)
	defer c.Close()

	const workers, iterations = 4, 2000
	var wg sync.WaitGroup
	var mu sync.Mutex
	permitted, rejected := map[string]int{}, map[string]int{}
	for w := range workers {
		wg.Go(func() {
			name := []string{"steady", "late"}[w%2]
			s, err := r.Get(name) // "late" is created here, racing
			if err != nil {
				t.Error(err)
				return
			}
			var p, rj int
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
	wg.Go(func() {
		for range 50 {
			testutil.CollectAndCount(c)
		}
	})
	wg.Wait()

	if total := permitted["steady"] + rejected["steady"] + permitted["late"] + rejected["late"]; total != workers*iterations {
		t.Fatalf("workers saw %d outcomes, want %d", total, workers*iterations)
	}
	// Compare the counters of steady and late only: the churned bulkheads'
	// depend on the interleaving.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, mf := range mfs {
		if mf.GetName() != "bulkhead_calls_total" {
			continue
		}
		for _, m := range mf.Metric {
			name := m.Label[1].GetValue()
			got[name] += fmt.Sprintf("%s=%v ", m.Label[0].GetValue(), m.Counter.GetValue())
		}
	}
	for _, name := range []string{"steady", "late"} {
		want := fmt.Sprintf("cancelled=0 finished=%d permitted=%d rejected=%d ", permitted[name], permitted[name], rejected[name])
		if got[name] != want {
			t.Errorf("%s: counters %q, want %q", name, got[name], want)
		}
	}
}

func TestCollectorDropsEvictedBulkheadsAndReportsTheRegistry(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)),
		bulkhead.WithIdleTimeout(time.Second), bulkhead.WithMaxBulkheads(1, bulkhead.Config{MaxConcurrentCalls: 1}))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	c := bulkheadprom.NewCollector(r)
	defer c.Close()
	a, l := r.AcquirePermissionAsync("tenant-1", bulkhead.CallOptions{})
	a2, l2 := r.AcquirePermissionAsync("tenant-2", bulkhead.CallOptions{}) // beyond the cap: the catch-all
	if a.Err() != nil || a2.Err() != nil || l2.Name() != bulkhead.CatchAllName {
		t.Fatalf("acquire: %v, %v via %q", a.Err(), a2.Err(), l2.Name())
	}
	l.FinishCall()
	l2.FinishCall()
	registry := func(bulkheads, evictions, catchAll int) string {
		return fmt.Sprintf(`
# HELP bulkhead_registry_bulkheads Number of live bulkheads of the registry, the catch-all included.
# TYPE bulkhead_registry_bulkheads gauge
bulkhead_registry_bulkheads %d
# HELP bulkhead_registry_evictions_total Number of bulkheads the registry evicted as idle.
# TYPE bulkhead_registry_evictions_total counter
bulkhead_registry_evictions_total %d
# HELP bulkhead_registry_catch_all_calls_total Number of keyed calls the registry sent to its catch-all bulkhead because it held its maximum number of bulkheads.
# TYPE bulkhead_registry_catch_all_calls_total counter
bulkhead_registry_catch_all_calls_total %d
`, bulkheads, evictions, catchAll)
	}
	registryMetrics := []string{"bulkhead_registry_bulkheads", "bulkhead_registry_evictions_total", "bulkhead_registry_catch_all_calls_total"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(registry(2, 0, 1)), registryMetrics...); err != nil {
		t.Fatal(err)
	}
	compare(t, c, exposition(bulkhead.CatchAllName, 1, 1, 0, 0, 1, 0, 1, 0)+exposition("tenant-1", 1, 1, 0, 0, 1, 0, 1, 0))

	clock.Advance(2 * time.Second)
	if err := testutil.CollectAndCompare(c, strings.NewReader(registry(1, 1, 1)), registryMetrics...); err != nil {
		t.Fatal(err)
	}
	compare(t, c, exposition(bulkhead.CatchAllName, 1, 1, 0, 0, 1, 0, 1, 0))

	// Re-created after its eviction, the bulkhead counts from zero.
	a, l = r.AcquirePermissionAsync("tenant-1", bulkhead.CallOptions{})
	if a.Err() != nil {
		t.Fatal(a.Err())
	}
	l.FinishCall()
	compare(t, c, exposition(bulkhead.CatchAllName, 1, 1, 0, 0, 1, 0, 1, 0)+exposition("tenant-1", 1, 1, 0, 0, 1, 0, 1, 0))
}
