package linearizability_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/linearizability"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// TestConcurrentBudgetHistoriesAreLinearizable records many short
// histories of clients racing on one Budget's flows (calls of random flow,
// class and weight, reads and awaits of their outcomes, Cancel,
// FinishCall, ChangeConfig of the size, Metrics) and checks each one with
// porcupine against linearizability.BudgetModel, the naive sequential
// model of package budgetmodel. The budget has three classes (one with
// headroom and a queue bound, one with a share, one that never waits), a
// group with a reserve, weights 1 and 2 and MaxBypass 1, so that priority,
// shares, reserves, bypass, shedding and NoWait all race with releases and
// cancels. Calls through a partner bulkhead are not in the model: the two
// levels are not one atomic step (docs/design.md, "The hub budget"); the
// stress test of the core checks them.
func TestConcurrentBudgetHistoriesAreLinearizable(t *testing.T) {
	n := historiesPerConfig(t)
	cfg := bulkhead.BudgetConfig{
		Size: 4, MaxQueuedCalls: 5, MaxBypass: 1,
		Classes: []bulkhead.ClassConfig{
			{Name: "hi", Headroom: 1, MaxWaitDuration: neverExpiring, MaxQueuedCalls: 3},
			{Name: "lo", Share: 1, MaxWaitDuration: neverExpiring, MaxQueuedCalls: bulkhead.Unbounded},
			{Name: "now"},
		},
		Groups: []bulkhead.GroupConfig{{Name: "gold", Nominal: 1, Lendable: 0, BorrowingLimit: bulkhead.Unbounded}},
	}
	groups := []string{"", "", "gold"}
	model := linearizability.BudgetModel(cfg, groups)
	var ok, ops, unknown int
	for h := range n {
		history := recordBudgetHistory(t, cfg, groups, uint64(h))
		ops += len(history)
		switch res, info := porcupine.CheckOperationsVerbose(model, history, checkTimeout); res {
		case porcupine.Ok:
			ok++
		case porcupine.Unknown:
			unknown++
		default:
			path := fmt.Sprintf("%s/budget-history-%d.html", t.TempDir(), h)
			_ = porcupine.VisualizePath(model, info, path)
			t.Fatalf("history %d is not linearizable (%d operations; visualisation: %s)", h, len(history), path)
		}
	}
	t.Logf("%d histories (%d operations): %d linearizable, %d unknown (timeout)", n, ops, ok, unknown)
	if unknown > n/10 {
		t.Errorf("%d of %d histories timed out", unknown, n)
	}
}

func recordBudgetHistory(t *testing.T, cfg bulkhead.BudgetConfig, groups []string, seed uint64) []porcupine.Operation {
	t.Helper()
	clk := testkit.NewVirtualClock(time.Unix(0, 0)) // nobody advances it: no wait expires
	b, err := bulkhead.NewBudget("hub", cfg, bulkhead.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	var flows []*bulkhead.BudgetPartner
	for i, g := range groups {
		f, err := b.Flow(fmt.Sprint("f", i), bulkhead.PartnerOptions{Group: g})
		if err != nil {
			t.Fatal(err)
		}
		flows = append(flows, f)
	}
	var classes []bulkhead.Class
	for _, c := range cfg.Classes {
		cl, _ := b.Class(c.Name)
		classes = append(classes, cl)
	}
	var r linearizability.BudgetRecorder
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			r.BudgetClient(b, cfg, flows, classes, c, opsPerClient, rng, []int{4, 5, 6})
		}()
	}
	wg.Wait()
	if m := b.Metrics(); m.InUse != 0 || m.Queued != 0 {
		t.Fatalf("history %d left %+v", seed, m)
	}
	return r.History()
}
