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
	r := bulkhead.NewRegistry(defaults, bulkhead.WithBulkheadOptions(bulkhead.WithClock(clock)))
	testkit.CheckRegistry(t, r)
	return r
}

func mustBulkhead(t *testing.T, r *bulkhead.Registry, name string) *bulkhead.Semaphore {
	t.Helper()
	s, err := r.Bulkhead(name)
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
# HELP bulkhead_max_queued_calls Configured bound of the wait queue (MaxQueuedCalls); 0 means unbounded.
# TYPE bulkhead_max_queued_calls gauge
# HELP bulkhead_calls_total Calls seen by the bulkhead since it was first scraped, by kind: permitted, rejected, finished, cancelled.
# TYPE bulkhead_calls_total counter
`

func compare(t *testing.T, c prometheus.Collector, want string) {
	t.Helper()
	if err := testutil.CollectAndCompare(c, strings.NewReader(header+want)); err != nil {
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
	s.OnComplete()        // finished
	s.ReleasePermission() // released unused: no event
	compare(t, c, exposition("walmart", 2, 2, 0, 1, 2, 1, 1, 1))
}

func TestCollectorPicksUpBulkheadsCreatedLater(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	c := bulkheadprom.NewCollector(r)
	defer c.Close()
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Fatalf("an empty registry gave %d metrics", n)
	}

	late := mustBulkhead(t, r, "late")
	late.TryAcquirePermission() // before the first scrape that sees "late": not counted
	late.OnComplete()
	compare(t, c, exposition("late", 1, 1, 0, 0, 0, 0, 0, 0))

	late.TryAcquirePermission() // counted from now on
	late.TryAcquirePermission()
	late.OnComplete()
	compare(t, c, exposition("late", 1, 1, 0, 0, 1, 1, 1, 0))
}

func TestCollectorForgetsRemovedBulkheads(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	old := mustBulkhead(t, r, "p")
	mustBulkhead(t, r, "q")
	c := bulkheadprom.NewCollector(r)
	defer c.Close()
	old.TryAcquirePermission()
	old.OnComplete()
	if n := testutil.CollectAndCount(c); n != 16 {
		t.Fatalf("two bulkheads gave %d metrics, want 16", n)
	}

	r.Remove("p")
	compare(t, c, exposition("q", 1, 1, 0, 0, 0, 0, 0, 0))

	// A new bulkhead under the old name starts from zero: the old one's
	// listener is gone, so its later events are not counted either.
	renewed := mustBulkhead(t, r, "p")
	compare(t, c, exposition("p", 1, 1, 0, 0, 0, 0, 0, 0)+exposition("q", 1, 1, 0, 0, 0, 0, 0, 0))
	old.TryAcquirePermission()
	old.OnComplete()
	renewed.TryAcquirePermission()
	renewed.OnComplete()
	compare(t, c, exposition("p", 1, 1, 0, 0, 1, 0, 1, 0)+exposition("q", 1, 1, 0, 0, 0, 0, 0, 0))
}

func TestCloseStopsCountingAndKeepsGauges(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	s := mustBulkhead(t, r, "p")
	c := bulkheadprom.NewCollector(r)
	s.TryAcquirePermission()
	c.Close()
	c.Close() // idempotent
	s.OnComplete()
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

func TestNewCollectorPanicsOnNilRegistry(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewCollector(nil) did not panic")
		}
	}()
	bulkheadprom.NewCollector(nil)
}

// TestConcurrentScrapesCountEveryEvent hammers the collector: scrapes,
// bulkhead creation and removal race with traffic. Every event of a bulkhead
// that was subscribed before the traffic started must be counted exactly
// once.
func TestConcurrentScrapesCountEveryEvent(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2})
	s := mustBulkhead(t, r, "steady")
	c := bulkheadprom.NewCollector(r)
	defer c.Close()

	const workers, iterations = 4, 2000
	var wg sync.WaitGroup
	var permitted, rejected sync.Map
	for w := range workers {
		wg.Go(func() {
			var p, rj int
			for range iterations {
				if s.TryAcquirePermission() {
					p++
					s.OnComplete()
				} else {
					rj++
				}
			}
			permitted.Store(w, p)
			rejected.Store(w, rj)
		})
	}
	wg.Go(func() {
		for i := range 200 {
			name := fmt.Sprintf("churn-%d", i%5)
			if b, err := r.Bulkhead(name); err == nil && b.TryAcquirePermission() {
				b.OnComplete()
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

	var wantP, wantR int
	permitted.Range(func(_, v any) bool { wantP += v.(int); return true })
	rejected.Range(func(_, v any) bool { wantR += v.(int); return true })
	// Compare only the steady bulkhead's series: the churned ones depend on
	// the interleaving.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, mf := range mfs {
		if mf.GetName() != "bulkhead_calls_total" {
			continue
		}
		for _, m := range mf.Metric {
			if m.Label[1].GetValue() == "steady" {
				fmt.Fprintf(&got, "%s=%v ", m.Label[0].GetValue(), m.Counter.GetValue())
			}
		}
	}
	if wantStr := fmt.Sprintf("cancelled=0 finished=%d permitted=%d rejected=%d ", wantP, wantP, wantR); got.String() != wantStr {
		t.Fatalf("counters %q, want %q", got.String(), wantStr)
	}
	if wantP+wantR != workers*iterations {
		t.Fatalf("workers saw %d outcomes, want %d", wantP+wantR, workers*iterations)
	}
}
