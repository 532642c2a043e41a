package prometheus_test

// The tests in this file read the package's promises as a hostile caller
// would: bulkheads, budgets, classes and groups named with bytes that are
// not UTF-8 (which client_golang refuses as label values).

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// gatherLabels gathers c alone with a pedantic registry and returns, per
// metric family, the values of label, failing the test if the gathering
// fails.
func gatherLabels(t *testing.T, c prometheus.Collector, label string) map[string][]string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	got := map[string][]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && !slices.Contains(got[mf.GetName()], l.GetValue()) {
					got[mf.GetName()] = append(got[mf.GetName()], l.GetValue())
				}
			}
		}
	}
	return got
}

// Promise (Collector): "Every bulkhead a source holds at scrape time is
// reported", and a scrape never fails for a name: a bulkhead named with
// bytes that are not UTF-8 (a key taken from a peer's request) cannot be a
// label value, so it is left out, and the other bulkheads, before and after
// it in name order, are reported as usual.
func TestHostileBulkheadNamedWithInvalidUTF8IsLeftOutOfTheScrape(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2})
	for _, name := range []string{"a", "b\xff", "c"} {
		s := mustBulkhead(t, r, name)
		if !s.TryAcquirePermission() {
			t.Fatalf("%q: no permit", name)
		}
		s.FinishCall()
	}
	c := bulkheadprom.NewCollector(r, bulkheadprom.WithResilience4jNames())
	defer c.Close()
	got := gatherLabels(t, c, "name")
	for _, family := range []string{"bulkhead_available_concurrent_calls", "bulkhead_calls_total",
		"bulkhead_wait_duration_seconds", "resilience4j_bulkhead_available_concurrent_calls"} {
		if want := []string{"a", "c"}; !slices.Equal(got[family], want) {
			t.Errorf("%s: names %q, want %q", family, got[family], want)
		}
	}
}

// Promise (AdaptiveCollector): "Every adaptive bulkhead the registry has
// created at scrape time is reported", the one named with invalid UTF-8
// left out without failing the scrape.
func TestHostileAdaptiveBulkheadNamedWithInvalidUTF8IsLeftOutOfTheScrape(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, reg)
	ar, err := adaptive.NewRegistry(reg, adaptive.Config{Algorithm: func() adaptive.Algorithm { return &adaptive.AIMD{} }}, adaptive.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b\xff", "c"} {
		if _, err := ar.Get(name); err != nil {
			t.Fatal(err)
		}
	}
	got := gatherLabels(t, bulkheadprom.NewAdaptiveCollector(ar), "name")
	if want := []string{"a", "c"}; !slices.Equal(got["bulkhead_adaptive_limit"], want) {
		t.Errorf("bulkhead_adaptive_limit: names %q, want %q", got["bulkhead_adaptive_limit"], want)
	}
}

// Promise (BudgetCollector): each scrape reports every budget, its classes
// and its groups; one whose name, or a class or group whose name, is not
// UTF-8 is left out (a budget, with all its series), and the scrape of the
// others does not fail.
func TestHostileBudgetClassAndGroupNamedWithInvalidUTF8AreLeftOutOfTheScrape(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	newBudget := func(name string) *bulkhead.Budget {
		b, err := bulkhead.NewBudget(name, bulkhead.BudgetConfig{
			Size:    4,
			Classes: []bulkhead.ClassConfig{{Name: "ok"}, {Name: "bad\xff"}},
			Groups:  []bulkhead.GroupConfig{{Name: "gold", Nominal: 1, BorrowingLimit: bulkhead.Unbounded}, {Name: "lead\xfe", Nominal: 1, BorrowingLimit: bulkhead.Unbounded}},
		}, bulkhead.WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		testkit.CheckBudget(t, b)
		return b
	}
	c := bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{newBudget("x\xff"), newBudget("hub")})
	defer c.Close()
	if got, want := gatherLabels(t, c, "budget")["bulkhead_budget_max_allowed_permits"], []string{"hub"}; !slices.Equal(got, want) {
		t.Errorf("budgets %q, want %q", got, want)
	}
	if got, want := gatherLabels(t, c, "class")["bulkhead_budget_calls_total"], []string{"ok"}; !slices.Equal(got, want) {
		t.Errorf("classes %q, want %q", got, want)
	}
	if got, want := gatherLabels(t, c, "group")["bulkhead_budget_group_nominal_permits"], []string{"gold"}; !slices.Equal(got, want) {
		t.Errorf("groups %q, want %q", got, want)
	}
}
