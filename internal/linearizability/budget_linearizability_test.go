package linearizability_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
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
// cancels. TestConcurrentBudgetHistoriesWithPartnersAreLinearizable adds
// partner bulkheads.
func TestConcurrentBudgetHistoriesAreLinearizable(t *testing.T) {
	n := historiesPerConfig(t)
	cfg := historyBudgetConfig()
	groups := []string{"", "", "gold"}
	checkBudgetHistories(t, n, cfg, groups, nil, linearizability.BudgetModel(cfg, groups), checkTimeout)
}

// TestConcurrentBudgetHistoriesWithPartnersAreLinearizable is
// TestConcurrentBudgetHistoriesAreLinearizable with two of the four flows
// partners with a *Semaphore of their own (limit 2; FIFO with an unbounded
// queue, LIFO with a queue of 2, so evictions), whose limit clients change
// to 1, 2 or 3 (a call of weight 2 is then too heavy, or waits at the
// partner behind or past others), and whose Metrics they read: the
// two-level admission against linearizability.BudgetModelWithPartners, in
// which a call's arrival at the budget, the give-back of its partner
// permits and a partner's rejection reaching the call are steps of their
// own (the model's state is the set of models the history allows), owed
// by an operation's BReturned if its goroutine runs them.
func TestConcurrentBudgetHistoriesWithPartnersAreLinearizable(t *testing.T) {
	// A quarter of the histories unless LINEARIZABILITY_HISTORIES says:
	// the model's state is a set, and a few histories in a hundred take
	// the checker's whole time limit.
	n := historiesPerConfig(t)
	if os.Getenv("LINEARIZABILITY_HISTORIES") == "" {
		n /= 4
	}
	cfg := historyBudgetConfig()
	groups := []string{"", "gold", "", "gold"}
	partners := []*bulkhead.Config{
		nil, nil,
		{MaxConcurrentCalls: 2, MaxWaitDuration: neverExpiring, MaxQueuedCalls: bulkhead.Unbounded},
		{MaxConcurrentCalls: 2, MaxWaitDuration: neverExpiring, MaxQueuedCalls: 2, QueueOrder: bulkhead.LIFO},
	}
	// 5 s per history: the rare history whose sets grow large is left
	// unknown sooner (0.7 % of them at 10 s, 2.2 % at 3 s; see
	// checkBudgetHistories for how many may be).
	checkBudgetHistories(t, n, cfg, groups, partners, linearizability.BudgetModelWithPartners(cfg, groups, partners), 5*time.Second)
}

// historyBudgetConfig is the budget of both budget histories: three
// classes (one with headroom and a queue bound, one with a share, one
// that never waits), a group with a reserve, MaxBypass 1.
func historyBudgetConfig() bulkhead.BudgetConfig {
	return bulkhead.BudgetConfig{
		Size: 4, MaxQueuedCalls: 5, MaxBypass: 1,
		Classes: []bulkhead.ClassConfig{
			{Name: "hi", Headroom: 1, MaxWaitDuration: neverExpiring, MaxQueuedCalls: 3},
			{Name: "lo", Share: 1, MaxWaitDuration: neverExpiring, MaxQueuedCalls: bulkhead.Unbounded},
			{Name: "now"},
		},
		Groups: []bulkhead.GroupConfig{{Name: "gold", Nominal: 1, Lendable: 0, BorrowingLimit: bulkhead.Unbounded}},
	}
}

func checkBudgetHistories(t *testing.T, n int, cfg bulkhead.BudgetConfig, groups []string, partners []*bulkhead.Config, model porcupine.Model, timeout time.Duration) {
	t.Helper()
	var ok, ops, unknown int
	for h := range n {
		history := recordBudgetHistory(t, cfg, groups, partners, uint64(h))
		ops += len(history)
		switch res, info := porcupine.CheckOperationsVerbose(model, history, timeout); res {
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
	// A tenth may time out, and at least 5: with 25 histories (make test's
	// partner run) a bound of 2 failed about one run in 50 under load
	// (2.2 % unknown at 3 s); more than 5 is a change in the checker's
	// cost, not chance.
	if unknown > max(n/10, 5) {
		t.Errorf("%d of %d histories timed out", unknown, n)
	}
}

func recordBudgetHistory(t *testing.T, cfg bulkhead.BudgetConfig, groups []string, partners []*bulkhead.Config, seed uint64) []porcupine.Operation {
	t.Helper()
	clk := testkit.NewVirtualClock(time.Unix(0, 0)) // nobody advances it: no wait expires
	b, err := bulkhead.NewBudget("hub", cfg, bulkhead.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	var flows []*bulkhead.BudgetPartner
	parts := make([]*bulkhead.Semaphore, len(groups))
	for i, g := range groups {
		var f *bulkhead.BudgetPartner
		if i < len(partners) && partners[i] != nil {
			if parts[i], err = bulkhead.New(fmt.Sprint("p", i), *partners[i], bulkhead.WithClock(clk)); err != nil {
				t.Fatal(err)
			}
			f, err = b.Partner(parts[i], bulkhead.PartnerOptions{Group: g})
		} else {
			f, err = b.Flow(fmt.Sprint("f", i), bulkhead.PartnerOptions{Group: g})
		}
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
			r.BudgetClient(b, cfg, flows, classes, c, opsPerClient, rng, []int{4, 5, 6}, parts, partners, []int{1, 2, 3})
		}()
	}
	wg.Wait()
	if m := b.Metrics(); m.InUse != 0 || m.Queued != 0 {
		t.Fatalf("history %d left %+v", seed, m)
	}
	for i, p := range parts {
		// A partner grant's arrival may still run on a goroutine the
		// library started: yield until it has (a bounded number of times).
		for tries := 0; p != nil && (p.Metrics().InFlightCalls != 0 || p.Metrics().QueuedCalls != 0); tries++ {
			if tries == 1_000_000 {
				t.Fatalf("history %d: partner of f%d left %+v", seed, i, p.Metrics())
			}
			runtime.Gosched()
		}
	}
	return r.History()
}
