package otel_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rxbulkhead/bulkhead"
	bulkheadotel "github.com/rxbulkhead/bulkhead/contrib/otel"
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
	testkit.CheckBudget(t, b)
	return b
}

// startBudgets wires BudgetInstruments over budgets to a manual reader.
func startBudgets(t *testing.T, budgets []*bulkhead.Budget, opts ...bulkheadotel.Option) (*bulkheadotel.BudgetInstruments, sdkmetric.Reader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	in, err := bulkheadotel.StartBudgets(budgets, append([]bulkheadotel.Option{bulkheadotel.WithMeterProvider(mp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in, reader
}

func TestBudgetInstrumentsObserveGaugesCountsAndWaitsPerClassAndGroup(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := newHubBudget(t, "hub", clock)
	_, reader := startBudgets(t, []*bulkhead.Budget{b}, bulkheadotel.WithWaitBuckets(100*time.Millisecond, time.Second))

	// A gold call held, a walmart batch call of weight 2 held, a walmart
	// interactive call granted after 200 ms (the free permit is gold's
	// reserve), a batch call rejected at once and one too heavy, an
	// interactive call of weight 2 that times out after 1 s.
	gold, _ := b.Flow("acme", bulkhead.PartnerOptions{Group: "gold"})
	walmart, _ := b.Flow("walmart", bulkhead.PartnerOptions{})
	interactive, _ := b.Class("interactive")
	batch, _ := b.Class("batch")
	held := []bulkhead.BudgetCall{gold.Call(interactive, 1), walmart.Call(batch, 2)}
	for _, c := range held {
		c.AcquirePermissionAsync()
	}
	waiter := walmart.Call(interactive, 1)
	a := waiter.AcquirePermissionAsync()
	walmart.Call(batch, 1).AcquirePermissionAsync()
	walmart.Call(batch, 5).AcquirePermissionAsync()
	clock.Advance(200 * time.Millisecond)
	held[1].FinishCall()
	if !a.Granted() {
		t.Fatal("waiter not granted")
	}
	held[1] = waiter
	walmart.Call(interactive, 2).AcquirePermissionAsync()
	clock.Advance(time.Second)
	// A gold call of weight 3 waits (2 permits free); cancelled after
	// the collection.
	goldWaiting := gold.Call(interactive, 3).AcquirePermissionAsync()
	defer func() {
		if !goldWaiting.Cancel() {
			t.Errorf("gold call not waiting: %v", goldWaiting.Err())
		}
		for _, c := range held {
			c.FinishCall()
		}
	}()

	got := collectAll(t, reader)
	hub := "budget=hub"
	want := map[string]int64{
		"bulkhead.budget.max_allowed_permits{" + hub + "}":                                  4,
		"bulkhead.budget.available_permits{" + hub + "}":                                    2,
		"bulkhead.budget.max_queued_calls{" + hub + "}":                                     10,
		"bulkhead.budget.partners{" + hub + "}":                                             2,
		"bulkhead.budget.permits_in_use{" + hub + ",class=interactive}":                     2,
		"bulkhead.budget.permits_in_use{" + hub + ",class=batch}":                           0,
		"bulkhead.budget.queued_calls{" + hub + ",class=interactive}":                       1,
		"bulkhead.budget.queued_calls{" + hub + ",class=batch}":                             0,
		"bulkhead.budget.calls{" + hub + ",class=interactive,kind=permitted}":               2,
		"bulkhead.budget.calls{" + hub + ",class=interactive,kind=rejected}":                1,
		"bulkhead.budget.calls{" + hub + ",class=interactive,kind=finished}":                0,
		"bulkhead.budget.calls{" + hub + ",class=interactive,kind=cancelled}":               0,
		"bulkhead.budget.calls{" + hub + ",class=batch,kind=permitted}":                     1,
		"bulkhead.budget.calls{" + hub + ",class=batch,kind=rejected}":                      2,
		"bulkhead.budget.calls{" + hub + ",class=batch,kind=finished}":                      1,
		"bulkhead.budget.calls{" + hub + ",class=batch,kind=cancelled}":                     0,
		"bulkhead.budget.granted_permits{" + hub + ",class=interactive}":                    2,
		"bulkhead.budget.granted_permits{" + hub + ",class=batch}":                          2,
		"bulkhead.budget.rejected_calls{" + hub + ",class=interactive,reason=wait_timeout}": 1,
		"bulkhead.budget.rejected_calls{" + hub + ",class=batch,reason=no_wait}":            1,
		"bulkhead.budget.rejected_calls{" + hub + ",class=batch,reason=too_heavy}":          1,
		"bulkhead.budget.group.nominal_permits{" + hub + ",group=gold}":                     2,
		"bulkhead.budget.group.permits_in_use{" + hub + ",group=gold}":                      1,
		"bulkhead.budget.group.queued_calls{" + hub + ",group=gold}":                        1,
		"bulkhead.budget.group.reserved_permits{" + hub + ",group=gold}":                    1,
	}
	for k, v := range want {
		if got.ints[k] != v {
			t.Errorf("%s = %d, want %d", k, got.ints[k], v)
		}
	}
	// Every other rejection series is there, at zero: 2 classes × 5 reasons.
	n := 0
	for k, v := range got.ints {
		if strings.HasPrefix(k, "bulkhead.budget.rejected_calls{") {
			n++
			if _, listed := want[k]; !listed && v != 0 {
				t.Errorf("%s = %d, want 0", k, v)
			}
		}
	}
	if n != 10 {
		t.Errorf("%d rejection series, want 10", n)
	}
	g := got.hists["bulkhead.budget.wait.duration{"+hub+",class=interactive,outcome=granted}"]
	if g.Count != 2 || g.Sum != 0.2 || len(g.BucketCounts) != 3 || g.BucketCounts[0] != 1 || g.BucketCounts[1] != 1 {
		t.Errorf("interactive granted waits: count %d sum %v buckets %v; want 2, 0.2, [1 1 0]", g.Count, g.Sum, g.BucketCounts)
	}
	r := got.hists["bulkhead.budget.wait.duration{"+hub+",class=interactive,outcome=rejected}"]
	if r.Count != 1 || r.Sum != 1 || r.BucketCounts[1] != 1 {
		t.Errorf("interactive rejected waits: count %d sum %v buckets %v; want 1, 1, [0 1 0]", r.Count, r.Sum, r.BucketCounts)
	}
	rb := got.hists["bulkhead.budget.wait.duration{"+hub+",class=batch,outcome=rejected}"]
	if rb.Count != 2 || rb.Sum != 0 {
		t.Errorf("batch rejected waits: count %d sum %v; want 2 at zero", rb.Count, rb.Sum)
	}
}

func TestBudgetInstrumentsHaveTheUnitsOfTheirKind(t *testing.T) {
	b := newHubBudget(t, "hub", testkit.NewVirtualClock(time.Unix(0, 0)))
	_, reader := startBudgets(t, []*bulkhead.Budget{b})
	p, _ := b.Flow("walmart", bulkhead.PartnerOptions{})
	p.AcquirePermissionAsync()
	defer p.FinishCall()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != bulkheadotel.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, bulkheadotel.ScopeName)
		}
		for _, m := range sm.Metrics {
			seen++
			want := "{permit}"
			switch {
			case m.Name == "bulkhead.budget.wait.duration":
				want = "s"
			case m.Name == "bulkhead.budget.partners":
				want = "{partner}"
			case strings.HasSuffix(m.Name, "calls"):
				want = "{call}"
			}
			if m.Unit != want {
				t.Errorf("%s has unit %q, want %q", m.Name, m.Unit, want)
			}
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && (!s.IsMonotonic || s.Temporality != metricdata.CumulativeTemporality) {
				t.Errorf("%s is not a cumulative monotonic sum", m.Name)
			}
		}
	}
	if seen != 14 {
		t.Errorf("%d instruments, want 14", seen)
	}
}

func TestBudgetInstrumentsObserveNothingAfterClose(t *testing.T) {
	b := newHubBudget(t, "hub", testkit.NewVirtualClock(time.Unix(0, 0)))
	in, reader := startBudgets(t, []*bulkhead.Budget{b})
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if err := in.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	p, _ := b.Flow("walmart", bulkhead.PartnerOptions{})
	p.AcquirePermissionAsync()
	defer p.FinishCall()
	got := collectAll(t, reader)
	if len(got.ints) != 0 || len(got.hists) != 0 {
		t.Errorf("after Close: %v %v", got.ints, got.hists)
	}
}

func TestStartBudgetsRefusesBadArgumentsNamingThem(t *testing.T) {
	b := newHubBudget(t, "hub", testkit.NewVirtualClock(time.Unix(0, 0)))
	for _, tc := range []struct {
		budgets []*bulkhead.Budget
		opts    []bulkheadotel.Option
		want    string
	}{
		{nil, nil, "bulkhead/contrib/otel: StartBudgets called without a budget"},
		{[]*bulkhead.Budget{b, nil}, nil, "bulkhead/contrib/otel: StartBudgets called with a nil *bulkhead.Budget at index 1"},
		{[]*bulkhead.Budget{b, b}, nil, "bulkhead/contrib/otel: StartBudgets called with two budgets named hub"},
		{[]*bulkhead.Budget{b}, []bulkheadotel.Option{nil}, "bulkhead/contrib/otel: StartBudgets called with a nil Option at index 0"},
		{[]*bulkhead.Budget{b}, []bulkheadotel.Option{bulkheadotel.WithWaitBuckets(-time.Second)}, "bulkhead/contrib/otel: WithWaitBuckets: bucket bound -1s is not positive"},
	} {
		in, err := bulkheadotel.StartBudgets(tc.budgets, tc.opts...)
		if in != nil || err == nil || err.Error() != tc.want {
			t.Errorf("StartBudgets = %v, %v; want %q", in, err, tc.want)
		}
	}
}

// The checks of the real-Prometheus budget test (contrib/prometheus), on
// the OpenTelemetry side through the SDK's in-memory reader: a budget under
// load (interactive calls of weight 1, batch calls of weight 2 with a
// share, a short wait and a small queue) in a testing/synctest bubble, and
// what the reader collects matches what the test saw: the calls and permits
// granted per class, the rejections by reason, every bucket of the waits.
func TestOTelReaderAnswersAboutABudgetUnderLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		buckets := []time.Duration{time.Millisecond, 5 * time.Millisecond, 25 * time.Millisecond, 100 * time.Millisecond, time.Second}
		hub, err := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
			Size:           4,
			MaxQueuedCalls: 8,
			Classes: []bulkhead.ClassConfig{
				{Name: "interactive", Headroom: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
				{Name: "batch", Share: 2, MaxWaitDuration: 8 * time.Millisecond, MaxQueuedCalls: 2},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		testkit.CheckBudget(t, hub)
		_, reader := startBudgets(t, []*bulkhead.Budget{hub}, bulkheadotel.WithWaitBuckets(buckets...))
		interactive, _ := hub.Class("interactive")
		batch, _ := hub.Class("batch")

		var mu sync.Mutex
		permitted, permits, rejected := map[string]int64{}, map[string]int64{}, map[string]int64{}
		waits := map[string][]uint64{} // class/outcome -> per bucket, the last +Inf
		hub.OnEvent(func(e bulkhead.BudgetEvent) {
			mu.Lock()
			defer mu.Unlock()
			outcome := "granted"
			switch e.Type {
			case bulkhead.CallPermitted:
				permitted[e.Class]++
				permits[e.Class] += int64(e.Weight)
			case bulkhead.CallRejected:
				outcome = "rejected"
				label := map[bulkhead.Reason]string{bulkhead.NoWait: "no_wait", bulkhead.QueueFull: "queue_full", bulkhead.WaitTimeout: "wait_timeout", bulkhead.Evicted: "evicted"}[e.Reason]
				rejected[e.Class+"/"+label]++
			default:
				return
			}
			key := e.Class + "/" + outcome
			if waits[key] == nil {
				waits[key] = make([]uint64, len(buckets)+1)
			}
			i, _ := slices.BinarySearch(buckets, e.Wait)
			waits[key][i]++
		})

		// 2 s of load: four partners' interactive calls held 3 ms, four
		// partners' batch calls held 5 ms; a rejected caller backs off 1 ms.
		ctx, stop := context.WithTimeout(context.Background(), 2*time.Second)
		defer stop()
		var load sync.WaitGroup
		for i := range 8 {
			p, _ := hub.Flow(fmt.Sprintf("partner-%d", i), bulkhead.PartnerOptions{})
			call, hold := p.Call(interactive, 1), 3*time.Millisecond
			if i%2 == 1 {
				call, hold = p.Call(batch, 2), 5*time.Millisecond
			}
			load.Go(func() {
				for ctx.Err() == nil {
					if call.AcquirePermission(context.Background()) == nil {
						time.Sleep(hold)
						call.FinishCall()
					} else {
						time.Sleep(time.Millisecond)
					}
				}
			})
		}
		load.Wait()
		synctest.Wait()

		got := collectAll(t, reader)
		mu.Lock()
		defer mu.Unlock()
		for _, class := range []string{"interactive", "batch"} {
			if permitted[class] == 0 {
				t.Errorf("the load granted no %s call: the test checks nothing for it", class)
			}
			if g := got.ints["bulkhead.budget.calls{budget=hub,class="+class+",kind=permitted}"]; g != permitted[class] {
				t.Errorf("%s permitted: reader %d, test %d", class, g, permitted[class])
			}
			if g := got.ints["bulkhead.budget.granted_permits{budget=hub,class="+class+"}"]; g != permits[class] {
				t.Errorf("%s permits: reader %d, test %d", class, g, permits[class])
			}
		}
		for _, key := range []string{"batch/wait_timeout", "batch/queue_full"} {
			class, reason, _ := strings.Cut(key, "/")
			if rejected[key] == 0 {
				t.Errorf("the load made no %s rejection: the test checks nothing for it", key)
			}
			if g := got.ints["bulkhead.budget.rejected_calls{budget=hub,class="+class+",reason="+reason+"}"]; g != rejected[key] {
				t.Errorf("%s rejections: reader %d, test %d", key, g, rejected[key])
			}
		}
		for key, want := range waits {
			class, outcome, _ := strings.Cut(key, "/")
			p := got.hists["bulkhead.budget.wait.duration{budget=hub,class="+class+",outcome="+outcome+"}"]
			if !slices.Equal(p.BucketCounts, want) {
				t.Errorf("%s waits: reader buckets %v, test %v", key, p.BucketCounts, want)
			}
		}
		t.Logf("permitted %v, permits %v, rejected %v, waits %v", permitted, permits, rejected, waits)
	})
}
