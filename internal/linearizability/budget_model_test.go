package linearizability_test

import (
	"testing"

	"github.com/anishathalye/porcupine"

	bulkhead "github.com/rxbulkhead/bulkhead"
	lin "github.com/rxbulkhead/bulkhead/internal/linearizability"
)

// budgetOps builds a hand-made budget history: each op is (client, call
// time, return time, input, output).
type budgetOps []porcupine.Operation

func (h budgetOps) add(client int, call, ret int64, in lin.BudgetInput, out lin.BudgetOutput) budgetOps {
	return append(h, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// A call that queued at its partner, which another call's FinishCall then
// granted before the caller read its partner's Acquisition, is taken on by
// its own goroutine: what its AcquirePermissionAsync returns is what the
// budget decided at that arrival (here: rejected, NoWait, the budget full
// since the same FinishCall's budget permit went to a waiter). The model
// accepts that, and refuses the outcomes that arrival cannot give.
func TestBudgetModelLetsACallsOwnGoroutineTakeOnAPartnerGrantItDidNotSeeComing(t *testing.T) {
	cfg := bulkhead.BudgetConfig{Size: 2, MaxQueuedCalls: bulkhead.Unbounded, Classes: []bulkhead.ClassConfig{
		{Name: "wait", MaxWaitDuration: neverExpiring, MaxQueuedCalls: bulkhead.Unbounded},
		{Name: "now"},
	}}
	groups := []string{"", ""}
	partners := []*bulkhead.Config{nil, {MaxConcurrentCalls: 1, MaxWaitDuration: neverExpiring, MaxQueuedCalls: bulkhead.Unbounded}}
	history := func(outcome string, waiter bool) []porcupine.Operation {
		h := budgetOps{}.
			add(0, 0, 1, lin.BudgetInput{Kind: lin.BAcquire, ID: 1, Flow: 1, Class: "wait", Weight: 1}, lin.BudgetOutput{Outcome: "fast"}).
			add(0, 2, 3, lin.BudgetInput{Kind: lin.BReturned, ID: 1}, lin.BudgetOutput{}).
			add(2, 4, 5, lin.BudgetInput{Kind: lin.BAcquire, ID: 3, Flow: 0, Class: "wait", Weight: 1}, lin.BudgetOutput{Outcome: "fast"})
		if waiter {
			h = h.add(2, 6, 7, lin.BudgetInput{Kind: lin.BAcquire, ID: 4, Flow: 0, Class: "wait", Weight: 1}, lin.BudgetOutput{Outcome: "queued"})
		}
		return h.
			add(1, 8, 30, lin.BudgetInput{Kind: lin.BAcquire, ID: 2, Flow: 1, Class: "now", Weight: 1}, lin.BudgetOutput{Outcome: outcome}).
			// #2 waits at the partner before #1 gives its permits back.
			add(3, 9, 10, lin.BudgetInput{Kind: lin.BPartnerMetrics, Flow: 1}, lin.BudgetOutput{InUse: 1, Queued: 1}).
			add(0, 11, 12, lin.BudgetInput{Kind: lin.BRelease, ID: 1}, lin.BudgetOutput{}).
			add(0, 13, 14, lin.BudgetInput{Kind: lin.BReturned, ID: 1}, lin.BudgetOutput{}).
			add(1, 31, 32, lin.BudgetInput{Kind: lin.BReturned, ID: 2}, lin.BudgetOutput{})
	}
	model := lin.BudgetModelWithPartners(cfg, groups, partners)
	if !porcupine.CheckOperations(model, history("rejected:no wait", true)) {
		t.Error("the model refuses a queued partner call that came back rejected by the budget it reached on its own goroutine")
	}
	if !porcupine.CheckOperations(model, history("queued", false)) {
		t.Error("the model refuses a queued partner call that came back as a record, granted by the budget")
	}
	for name, h := range map[string][]porcupine.Operation{
		"fast, though it queued at its partner":       history("fast", false),
		"rejected NoWait, though the budget had room": history("rejected:no wait", false),
		"rejected by its partner, which granted it":   history("rejected:partner:no wait", true),
	} {
		if porcupine.CheckOperations(model, h) {
			t.Errorf("%s: the model accepts the history", name)
		}
	}
}
