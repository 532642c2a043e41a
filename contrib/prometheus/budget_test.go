package prometheus_test

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rxbulkhead/bulkhead"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
	"github.com/rxbulkhead/bulkhead/internal/metricstest"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// newHubBudget returns a budget of 4 permits: interactive calls wait up to
// a second, batch calls never wait; a gold group has a nominal share of 2,
// reserved while unused.
func newHubBudget(t *testing.T, name string, clock bulkhead.Clock) *bulkhead.Budget {
	t.Helper()
	b, err := bulkhead.NewBudget(name, bulkhead.BudgetConfig{
		Size:           4,
		MaxQueuedCalls: 10,
		Classes: []bulkhead.ClassConfig{
			{Name: "interactive", MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
			{Name: "batch"},
		},
		Groups: []bulkhead.GroupConfig{{Name: "gold", Nominal: 2, Lendable: 0, BorrowingLimit: bulkhead.Unbounded}},
	}, bulkhead.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// runBudgetLoad drives b on clock: a gold call held, a walmart batch call
// of weight 2 held, a walmart interactive call granted after waiting
// 200 ms (the free permit is gold's reserve), a batch call rejected at once
// and one too heavy, an interactive call of weight 2 that times out after
// 1 s. It returns the calls still held, to
// be finished.
func runBudgetLoad(t *testing.T, b *bulkhead.Budget, clock *testkit.VirtualClock) (finish func()) {
	t.Helper()
	gold, err := b.Flow("acme", bulkhead.PartnerOptions{Group: "gold"})
	if err != nil {
		t.Fatal(err)
	}
	walmart, _ := b.Flow("walmart", bulkhead.PartnerOptions{})
	interactive, _ := b.Class("interactive")
	batch, _ := b.Class("batch")
	held := []bulkhead.BudgetCall{gold.Call(interactive, 1), walmart.Call(batch, 2)}
	for _, c := range held {
		if !c.AcquirePermissionAsync().Granted() {
			t.Fatalf("%s %s not granted", c.Name(), c.Class().Name())
		}
	}
	// One permit is free, but it is gold's reserve: walmart waits.
	waiter := walmart.Call(interactive, 1)
	a := waiter.AcquirePermissionAsync()
	if p := walmart.Call(batch, 1).AcquirePermissionAsync(); p.Granted() {
		t.Fatal("batch call granted from gold's reserve")
	}
	if p := walmart.Call(batch, 5).AcquirePermissionAsync(); p.Err() == nil {
		t.Fatal("call of weight 5 granted by a budget of 4")
	}
	clock.Advance(200 * time.Millisecond)
	held[1].FinishCall()
	if !a.Granted() {
		t.Fatal("interactive waiter not granted when a permit came back")
	}
	held[1] = waiter
	late := walmart.Call(interactive, 2).AcquirePermissionAsync() // 1 permit free besides the reserve: waits
	clock.Advance(time.Second)
	if late.Err() == nil {
		t.Fatal("late waiter not timed out")
	}
	return func() {
		for _, c := range held {
			c.FinishCall()
		}
	}
}

func TestBudgetCollectorReportsGaugesCountsAndWaitsPerClassAndGroup(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := newHubBudget(t, "hub", clock)
	testkit.CheckBudget(t, b)
	c := bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{b}, bulkheadprom.WithWaitBuckets(100*time.Millisecond, time.Second))
	defer c.Close()
	finish := runBudgetLoad(t, b, clock)
	defer finish()
	// A gold call of weight 3 waits (2 permits free); cancelled after the
	// scrape.
	gold, _ := b.Flow("acme", bulkhead.PartnerOptions{Group: "gold"})
	interactive, _ := b.Class("interactive")
	goldWaiting := gold.Call(interactive, 3).AcquirePermissionAsync()
	defer func() {
		if !goldWaiting.Cancel() {
			t.Errorf("gold call not waiting: %v", goldWaiting.Err())
		}
	}()

	want := `
# HELP bulkhead_budget_available_permits Number of free permits of the budget.
# TYPE bulkhead_budget_available_permits gauge
bulkhead_budget_available_permits{budget="hub"} 2
# HELP bulkhead_budget_max_allowed_permits Configured number of permits of the budget (BudgetConfig.Size).
# TYPE bulkhead_budget_max_allowed_permits gauge
bulkhead_budget_max_allowed_permits{budget="hub"} 4
# HELP bulkhead_budget_permits_in_use Number of permits of the budget held by the calls of the class.
# TYPE bulkhead_budget_permits_in_use gauge
bulkhead_budget_permits_in_use{budget="hub",class="batch"} 0
bulkhead_budget_permits_in_use{budget="hub",class="interactive"} 2
# HELP bulkhead_budget_queued_calls Number of calls of the class waiting in the budget.
# TYPE bulkhead_budget_queued_calls gauge
bulkhead_budget_queued_calls{budget="hub",class="batch"} 0
bulkhead_budget_queued_calls{budget="hub",class="interactive"} 1
# HELP bulkhead_budget_max_queued_calls Configured bound of the calls waiting in the budget, all classes together; bulkhead.Unbounded (MaxInt) means no bound.
# TYPE bulkhead_budget_max_queued_calls gauge
bulkhead_budget_max_queued_calls{budget="hub"} 10
# HELP bulkhead_budget_partners Number of partners the budget keeps state for (BudgetMetrics.Partners); the bulkheads a registry evicts leave it.
# TYPE bulkhead_budget_partners gauge
bulkhead_budget_partners{budget="hub"} 2
# HELP bulkhead_budget_group_nominal_permits Configured nominal share of the group (GroupConfig.Nominal).
# TYPE bulkhead_budget_group_nominal_permits gauge
bulkhead_budget_group_nominal_permits{budget="hub",group="gold"} 2
# HELP bulkhead_budget_group_permits_in_use Number of permits of the budget held by the partners of the group.
# TYPE bulkhead_budget_group_permits_in_use gauge
bulkhead_budget_group_permits_in_use{budget="hub",group="gold"} 1
# HELP bulkhead_budget_group_queued_calls Number of calls of the group's partners waiting in the budget (after their partner's permit).
# TYPE bulkhead_budget_group_queued_calls gauge
bulkhead_budget_group_queued_calls{budget="hub",group="gold"} 1
# HELP bulkhead_budget_group_reserved_permits Permits kept free for the group: the part of its reserve (Nominal - Lendable) it does not use.
# TYPE bulkhead_budget_group_reserved_permits gauge
bulkhead_budget_group_reserved_permits{budget="hub",group="gold"} 1
# HELP bulkhead_budget_granted_permits_total Permits granted to the calls of the class: the sum of the granted calls' weights.
# TYPE bulkhead_budget_granted_permits_total counter
bulkhead_budget_granted_permits_total{budget="hub",class="batch"} 2
bulkhead_budget_granted_permits_total{budget="hub",class="interactive"} 2
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"bulkhead_budget_available_permits", "bulkhead_budget_max_allowed_permits", "bulkhead_budget_permits_in_use",
		"bulkhead_budget_queued_calls", "bulkhead_budget_max_queued_calls", "bulkhead_budget_partners", "bulkhead_budget_group_nominal_permits",
		"bulkhead_budget_group_permits_in_use", "bulkhead_budget_group_queued_calls", "bulkhead_budget_group_reserved_permits", "bulkhead_budget_granted_permits_total"); err != nil {
		t.Error(err)
	}

	mfs := gather(t, c)
	counter := func(family string, labels ...string) float64 {
		t.Helper()
		return find(t, mfs[family], labels...).GetCounter().GetValue()
	}
	for _, tc := range []struct {
		class, kind string
		want        float64
	}{
		{"interactive", "permitted", 2}, {"interactive", "rejected", 1}, {"interactive", "finished", 0}, {"interactive", "cancelled", 0},
		{"batch", "permitted", 1}, {"batch", "rejected", 2}, {"batch", "finished", 1},
	} {
		if got := counter("bulkhead_budget_calls_total", "class="+tc.class, "kind="+tc.kind); got != tc.want {
			t.Errorf("calls_total{class=%s,kind=%s} = %v, want %v", tc.class, tc.kind, got, tc.want)
		}
	}
	for _, tc := range []struct {
		class, reason string
		want          float64
	}{
		{"interactive", "wait_timeout", 1}, {"interactive", "no_wait", 0},
		{"batch", "no_wait", 1}, {"batch", "too_heavy", 1}, {"batch", "queue_full", 0}, {"batch", "evicted", 0},
	} {
		if got := counter("bulkhead_budget_rejected_calls_total", "class="+tc.class, "reason="+tc.reason); got != tc.want {
			t.Errorf("rejected_calls_total{class=%s,reason=%s} = %v, want %v", tc.class, tc.reason, got, tc.want)
		}
	}
	granted := find(t, mfs["bulkhead_budget_wait_duration_seconds"], "class=interactive", "outcome=granted").GetHistogram()
	if granted.GetSampleCount() != 2 || granted.GetSampleSum() != 0.2 || buckets(granted)[0.1] != 1 || buckets(granted)[1] != 2 {
		t.Errorf("interactive granted waits: count %d sum %v buckets %v; want 2, 0.2, {0.1:1 1:2}", granted.GetSampleCount(), granted.GetSampleSum(), buckets(granted))
	}
	rejected := find(t, mfs["bulkhead_budget_wait_duration_seconds"], "class=interactive", "outcome=rejected").GetHistogram()
	if rejected.GetSampleCount() != 1 || rejected.GetSampleSum() != 1 || buckets(rejected)[1] != 1 {
		t.Errorf("interactive rejected waits: count %d sum %v buckets %v; want 1, 1, {1:1}", rejected.GetSampleCount(), rejected.GetSampleSum(), buckets(rejected))
	}
}

func TestBudgetCollectorReportsEveryClassFromItsFirstScrapeAndAClassAddedLater(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := newHubBudget(t, "hub", clock)
	c := bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{b})
	defer c.Close()
	// 4 kinds + 1 + 5 reasons + 2 histograms per class, before any event.
	if n := testutil.CollectAndCount(c, "bulkhead_budget_calls_total", "bulkhead_budget_granted_permits_total",
		"bulkhead_budget_rejected_calls_total", "bulkhead_budget_wait_duration_seconds"); n != 2*12 {
		t.Errorf("%d counter and histogram series of two idle classes, want 24", n)
	}
	cfg := b.Config()
	cfg.Classes = append(cfg.Classes, bulkhead.ClassConfig{Name: "sheddable"})
	if err := b.ChangeConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "bulkhead_budget_permits_in_use"); n != 3 {
		t.Errorf("%d in-use series after adding a class, want 3", n)
	}
	cfg.Groups = nil
	if err := b.ChangeConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "bulkhead_budget_group_permits_in_use"); n != 0 {
		t.Errorf("%d group series after dropping the group, want 0", n)
	}
}

func TestBudgetCollectorCloseStopsCountingAndKeepsGauges(t *testing.T) {
	b := newHubBudget(t, "hub", testkit.NewVirtualClock(time.Unix(0, 0)))
	c := bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{b})
	c.Close()
	c.Close() // idempotent
	p, _ := b.Flow("walmart", bulkhead.PartnerOptions{})
	p.AcquirePermissionAsync()
	defer p.FinishCall()
	if n := testutil.CollectAndCount(c, "bulkhead_budget_calls_total"); n != 0 {
		t.Errorf("%d call series after Close, want 0", n)
	}
	if got := find(t, gather(t, c)["bulkhead_budget_available_permits"], "budget=hub").GetGauge().GetValue(); got != 3 {
		t.Errorf("available after Close = %v, want 3", got)
	}
}

func TestBudgetCollectorReportsSeveralBudgetsApart(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	hub, edge := newHubBudget(t, "hub", clock), newHubBudget(t, "edge", clock)
	c := bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{hub, edge})
	defer c.Close()
	p, _ := edge.Flow("walmart", bulkhead.PartnerOptions{})
	p.AcquirePermissionAsync()
	defer p.FinishCall()
	mfs := gather(t, c)
	if got := find(t, mfs["bulkhead_budget_calls_total"], "budget=edge", "class=batch", "kind=permitted").GetCounter().GetValue(); got != 1 {
		t.Errorf("edge permitted = %v, want 1", got)
	}
	if got := find(t, mfs["bulkhead_budget_calls_total"], "budget=hub", "class=batch", "kind=permitted").GetCounter().GetValue(); got != 0 {
		t.Errorf("hub permitted = %v, want 0", got)
	}
}

func TestNewBudgetCollectorPanicsNamingTheBadArgument(t *testing.T) {
	b := newHubBudget(t, "hub", testkit.NewVirtualClock(time.Unix(0, 0)))
	for _, tc := range []struct {
		name string
		call func()
		want string
	}{
		{"no budget", func() { bulkheadprom.NewBudgetCollector(nil) }, "bulkhead/contrib/prometheus: NewBudgetCollector called without a budget"},
		{"nil budget", func() { bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{b, nil}) }, "bulkhead/contrib/prometheus: NewBudgetCollector called with a nil *bulkhead.Budget at index 1"},
		{"same name", func() { bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{b, b}) }, "bulkhead/contrib/prometheus: NewBudgetCollector called with two budgets named hub"},
		{"nil option", func() { bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{b}, nil) }, "bulkhead/contrib/prometheus: NewBudgetCollector called with a nil Option at index 0"},
		{"bad buckets", func() {
			bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{b}, bulkheadprom.WithWaitBuckets(time.Second, time.Millisecond))
		},
			"bulkhead/contrib/prometheus: NewBudgetCollector: WithWaitBuckets: bucket bounds are not strictly increasing (1s, then 1ms)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); fmt.Sprint(r) != tc.want {
					t.Errorf("recovered %v, want %q", r, tc.want)
				}
			}()
			tc.call()
		})
	}
}

// The exposition of a BudgetCollector with every series populated passes
// promtool's linter.
func TestPromtoolChecksTheBudgetCollectorsExposition(t *testing.T) {
	promtool := metricstest.RequireTool(t, "promtool")
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := newHubBudget(t, "hub", clock)
	c := bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{b})
	defer c.Close()
	defer runBudgetLoad(t, b, clock)()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(string(textExposition(t, c)))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// Scrapes racing with calls of four partners in two classes (weights 1
// and 2, some rejected for want of permits) lose no event: once the calls
// are done, every counter equals what the callers saw.
//
// Both outcomes of the batch class happen whatever the scheduler does:
// the two interactive workers hold at most 2 of the 4 permits, so the first
// batch call tried while the other batch worker holds nothing is granted,
// and a weight-3 call asked while holding 2 is always rejected. (With a
// budget of 3, both interactive workers preempted while holding left every
// batch call rejected in one CI run.)
func TestConcurrentBudgetScrapesCountEveryEvent(t *testing.T) {
	b, err := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size:    4,
		Classes: []bulkhead.ClassConfig{{Name: "interactive"}, {Name: "batch"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckBudget(t, b)
	c := bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{b})
	defer c.Close()

	const workers, iterations = 4, 2000
	var wg sync.WaitGroup
	var mu sync.Mutex
	permitted, rejected := map[string]int{}, map[string]int{}
	for w := range workers {
		wg.Go(func() {
			p, err := b.Flow(fmt.Sprintf("partner-%d", w), bulkhead.PartnerOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			name := []string{"interactive", "batch"}[w%2]
			class, _ := b.Class(name)
			call, heavy := p.Call(class, 1+w%2), p.Call(class, 3)
			var ok, no int
			for i := range iterations {
				if call.AcquirePermissionAsync().Granted() {
					ok++
					// Now and then a batch worker asks for 3 more while it
					// holds 2 of the 4 permits: rejected whatever the
					// scheduler does (on a quiet machine the workers may
					// never overlap).
					if w%2 == 1 && i%10 == 0 {
						if heavy.AcquirePermissionAsync().Granted() {
							t.Error("a weight-3 call was granted while the caller held 2 of 4 permits")
							heavy.FinishCall()
						} else {
							no++
						}
					}
					call.FinishCall()
				} else {
					no++
				}
			}
			mu.Lock()
			permitted[name] += ok
			rejected[name] += no
			mu.Unlock()
		})
	}
	stop := make(chan struct{})
	var scrapes sync.WaitGroup
	scrapes.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				if _, err := testutil.GatherAndCount(registryOf(c)); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	wg.Wait()
	close(stop)
	scrapes.Wait()

	mfs := gather(t, c)
	for _, class := range []string{"interactive", "batch"} {
		weight := map[string]int{"interactive": 1, "batch": 2}[class]
		for _, tc := range []struct {
			family string
			labels []string
			want   int
		}{
			{"bulkhead_budget_calls_total", []string{"kind=permitted"}, permitted[class]},
			{"bulkhead_budget_calls_total", []string{"kind=finished"}, permitted[class]},
			{"bulkhead_budget_calls_total", []string{"kind=rejected"}, rejected[class]},
			{"bulkhead_budget_rejected_calls_total", []string{"reason=no_wait"}, rejected[class]},
			{"bulkhead_budget_granted_permits_total", nil, weight * permitted[class]},
		} {
			if got := find(t, mfs[tc.family], append(tc.labels, "class="+class)...).GetCounter().GetValue(); got != float64(tc.want) {
				t.Errorf("%s{class=%s,%v} = %v, want %d", tc.family, class, tc.labels, got, tc.want)
			}
		}
		if h := find(t, mfs["bulkhead_budget_wait_duration_seconds"], "class="+class, "outcome=granted").GetHistogram(); h.GetSampleCount() != uint64(permitted[class]) {
			t.Errorf("%s: %d granted waits, want %d", class, h.GetSampleCount(), permitted[class])
		}
	}
	if permitted["batch"] == 0 || rejected["batch"] == 0 {
		t.Errorf("batch permitted %d, rejected %d: the load did not exercise both", permitted["batch"], rejected["batch"])
	}
}

func registryOf(c prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	return reg
}
