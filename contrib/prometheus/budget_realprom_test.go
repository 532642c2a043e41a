package prometheus_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
	"github.com/rxbulkhead/bulkhead/internal/metricstest"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// A real Prometheus scrapes a test server whose budget runs under load
// (interactive calls of weight 1 and batch calls of weight 2 asking for
// twice its permits), and its PromQL answers match what the test did: the
// calls and permits granted per class, the rejections by reason, the 90th
// percentile of the interactive waits, the utilisation never above 1.
func TestRealPrometheusAnswersPromQLAboutABudgetUnderLoad(t *testing.T) {
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
	interactive, _ := hub.Class("interactive")
	batch, _ := hub.Class("batch")

	// What the test did, from its own listener.
	var mu sync.Mutex
	permitted := map[string]int{}
	permits := map[string]int{}
	rejected := map[string]int{} // by class/reason label
	waits := metricstest.NewHistogram(buckets)
	hub.OnEvent(func(e bulkhead.BudgetEvent) {
		mu.Lock()
		defer mu.Unlock()
		switch e.Type {
		case bulkhead.CallPermitted:
			permitted[e.Class]++
			permits[e.Class] += e.Weight
			if e.Class == "interactive" {
				waits.Add(e.Wait)
			}
		case bulkhead.CallRejected:
			label := map[bulkhead.Reason]string{bulkhead.NoWait: "no_wait", bulkhead.QueueFull: "queue_full", bulkhead.WaitTimeout: "wait_timeout", bulkhead.Evicted: "evicted"}[e.Reason]
			rejected[e.Class+"/"+label]++
		}
	})

	c := bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{hub}, bulkheadprom.WithWaitBuckets(buckets...))
	defer c.Close()
	prom := scrapedByPrometheus(t, c)
	prom.Await(t, `up{job="bulkheads"}`, 1, 20*time.Second)
	prom.Await(t, `sum(bulkhead_budget_calls_total{budget="hub"})`, 0, 5*time.Second)

	// The load, for 2 s: four partners' interactive calls (weight 1, held
	// ~3 ms) and four partners' batch calls (weight 2, held ~5 ms; they
	// have a share of 2 permits, wait at most 8 ms, two at a time, so some
	// time out and some find the queue full). A rejected caller backs off
	// 1 ms.
	ctx, stop := context.WithTimeout(context.Background(), 2*time.Second)
	defer stop()
	var load sync.WaitGroup
	var interactiveCalls, batchCalls []bulkhead.BudgetCall
	var decided atomic.Int64 // calls granted or rejected, as their callers saw
	for i := range 8 {
		p, err := hub.Flow(fmt.Sprintf("partner-%d", i), bulkhead.PartnerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		call, hold := p.Call(interactive, 1), 3*time.Millisecond
		if i%2 == 1 {
			call, hold = p.Call(batch, 2), 5*time.Millisecond
			batchCalls = append(batchCalls, call)
		} else {
			interactiveCalls = append(interactiveCalls, call)
		}
		load.Add(1)
		go func() {
			defer load.Done()
			for ctx.Err() == nil {
				err := call.AcquirePermission(context.Background())
				decided.Add(1)
				if err == nil {
					time.Sleep(hold)
					call.FinishCall()
				} else {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	load.Wait()
	budgetCoda(t, prom, hub, interactiveCalls[0], batchCalls, &decided)
	prom.Await(t, `sum(bulkhead_budget_permits_in_use{budget="hub"})`, 0, 10*time.Second)
	// A budget call's CallPermitted or CallRejected is published by the
	// goroutine that decided it, after its Done is closed, even for a
	// blocking call: wait until the listener has seen every decision the
	// callers saw, or the counts read below could miss the last ones.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		events := 0
		for _, n := range permitted {
			events += n
		}
		for _, n := range rejected {
			events += n
		}
		mu.Unlock()
		if int64(events) == decided.Load() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listener saw %d grants and rejections, the callers %d", events, decided.Load())
		}
	}

	mu.Lock()
	defer mu.Unlock()
	for _, class := range []string{"interactive", "batch"} {
		prom.Await(t, fmt.Sprintf(`bulkhead_budget_calls_total{budget="hub",class=%q,kind="permitted"}`, class), float64(permitted[class]), 10*time.Second)
		prom.Await(t, fmt.Sprintf(`bulkhead_budget_granted_permits_total{budget="hub",class=%q}`, class), float64(permits[class]), 5*time.Second)
		if permitted[class] == 0 {
			t.Errorf("the load granted no %s call: the test checks nothing for it", class)
		}
	}
	for _, key := range []string{"batch/wait_timeout", "batch/queue_full"} {
		class, reason, _ := strings.Cut(key, "/")
		prom.Await(t, fmt.Sprintf(`bulkhead_budget_rejected_calls_total{budget="hub",class=%q,reason=%q}`, class, reason), float64(rejected[key]), 5*time.Second)
		if rejected[key] == 0 {
			t.Errorf("the load made no %s rejection: the test checks nothing for it", key)
		}
	}
	if v := prom.One(t, `sum(bulkhead_budget_rejected_calls_total{budget="hub",class="interactive"})`); v != 0 {
		t.Errorf("Prometheus counts %v interactive rejections; the test saw none", v)
	}
	// The 90th percentile of the interactive calls' waits, as the test
	// computes it from its own observations with the same buckets.
	n, cum := waits.Cumulative()
	want := metricstest.Quantile(0.9, metricstest.Seconds(buckets), cum)
	got := prom.One(t, `histogram_quantile(0.9, rate(bulkhead_budget_wait_duration_seconds_bucket{budget="hub",class="interactive",outcome="granted"}[30s]))`)
	if math.Abs(got-want) > 1e-9*want {
		t.Errorf("p90 of the interactive waits: Prometheus %v, the test's own observations %v (buckets %v)", got, want, cum)
	}
	// Utilisation as the docs write it: some scrape saw the budget busy
	// (the coda's scrape of 3 permits in use, if none during the load),
	// none above its size.
	util := prom.One(t, `max_over_time((sum by (budget) (bulkhead_budget_permits_in_use) / on (budget) bulkhead_budget_max_allowed_permits)[30s:1s])`)
	if util <= 0 || util > 1 {
		t.Errorf("highest utilisation scraped %v, want in (0, 1]", util)
	}
	// Idle after the load.
	if v := prom.One(t, `bulkhead_budget_available_permits{budget="hub"}`); v != 4 {
		t.Errorf("%v free permits after the load, want 4", v)
	}
	t.Logf("permitted %v, permits %v, rejected %v; %d interactive waits, p90 %.4fs; highest utilisation scraped %.2f", permitted, permits, rejected, n, got, util)
}

// budgetCoda makes, after the load, each outcome the test checks once more,
// whatever the scheduler did during the load (on a loaded machine its
// callers may seldom overlap, and a legal schedule can keep them apart for
// all 2 s): with an interactive call (1 permit) and a batch call (2, the
// class's share) held, the next two batch calls wait (1 permit free, and
// it is the interactive class's headroom), a third is rejected queue_full
// (the class queues 2), and the two waiters are rejected wait_timeout
// (nothing else gives permits back: the load is over). The batch class
// waits without a bound until the third call is refused (with its 8 ms the
// waiters could expire first on a loaded machine); restoring 8 ms applies
// to them, counted from their arrival. While the 3 permits are held a
// scrape sees them in use (and the test then awaits one that sees none),
// so the utilisation query finds a busy sample whatever the scrapes during
// the load saw. The test's listener counts these calls like the load's.
// It adds the calls it decides to decided.
func budgetCoda(t *testing.T, prom *metricstest.Prometheus, hub *bulkhead.Budget, interactive bulkhead.BudgetCall, batch []bulkhead.BudgetCall, decided *atomic.Int64) {
	t.Helper()
	if err := interactive.AcquirePermission(context.Background()); err != nil {
		t.Fatalf("interactive, idle budget: %v", err)
	}
	defer interactive.FinishCall()
	if err := batch[0].AcquirePermission(context.Background()); err != nil {
		t.Fatalf("batch, 3 permits free: %v", err)
	}
	defer batch[0].FinishCall()
	rejectedFor := func(err error, want bulkhead.Reason) {
		t.Helper()
		var be *bulkhead.BudgetError
		if !errors.As(err, &be) || be.Class != "batch" || be.Reason != want {
			t.Fatalf("batch: %v, want a %v rejection", err, want)
		}
	}
	cfg := hub.Config()
	unbounded := hub.Config()
	for i := range unbounded.Classes {
		if unbounded.Classes[i].Name == "batch" {
			unbounded.Classes[i].MaxWaitDuration = bulkhead.NoTimeout
		}
	}
	if err := hub.ChangeConfig(unbounded); err != nil {
		t.Fatal(err)
	}
	var waiters sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		waiters.Go(func() { errs[i] = batch[1+i].AcquirePermission(context.Background()) })
	}
	for deadline := time.Now().Add(10 * time.Second); hub.Metrics().Queued < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("batch: %+v, want 2 waiters within 10s", hub.Metrics())
		}
	}
	rejectedFor(batch[3].AcquirePermissionAsync().Err(), bulkhead.QueueFull)
	if err := hub.ChangeConfig(cfg); err != nil {
		t.Fatal(err)
	}
	waiters.Wait()
	for _, err := range errs {
		rejectedFor(err, bulkhead.WaitTimeout)
	}
	decided.Add(5) // 2 grants, 3 rejections
	prom.Await(t, `sum(bulkhead_budget_permits_in_use{budget="hub"})`, 3, 10*time.Second)
}
