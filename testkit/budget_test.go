package testkit_test

import (
	"testing"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func newTestBudget(t *testing.T) *bulkhead.Budget {
	t.Helper()
	b, err := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size: 1, MaxQueuedCalls: bulkhead.Unbounded,
		Classes: []bulkhead.ClassConfig{{Name: "batch", MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded}},
	}, bulkhead.WithClock(testkit.NewVirtualClock(start)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheckBudgetPassesWhenEveryPermitCameBack(t *testing.T) {
	b := newTestBudget(t)
	flow, _ := b.Flow("acme", bulkhead.PartnerOptions{})
	f := runFake(func(tb *fakeTB) {
		testkit.CheckBudget(tb, b)
		flow.AcquirePermissionAsync()
		flow.FinishCall()
	})
	wantPass(t, f)
}

func TestCheckBudgetFailsOnAPermitInUseAndACallWaiting(t *testing.T) {
	b := newTestBudget(t)
	flow, _ := b.Flow("acme", bulkhead.PartnerOptions{})
	var waiting *bulkhead.Acquisition
	f := runFake(func(tb *fakeTB) {
		testkit.CheckBudget(tb, b)
		flow.AcquirePermissionAsync()
		waiting = flow.AcquirePermissionAsync()
	})
	wantFailure(t, f, `budget "hub"`, "1 permit(s) in use", "1 call(s) queued", "Name:batch")
	waiting.Cancel()
	flow.FinishCall()
}

func TestCheckBudgetNamesTheGroupThatLeaked(t *testing.T) {
	b, err := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size: 1, MaxQueuedCalls: bulkhead.Unbounded,
		Groups:  []bulkhead.GroupConfig{{Name: "gold", Nominal: 1}},
		Classes: []bulkhead.ClassConfig{{Name: "batch", MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded}},
	}, bulkhead.WithClock(testkit.NewVirtualClock(start)))
	if err != nil {
		t.Fatal(err)
	}
	gold, err := b.Flow("acme", bulkhead.PartnerOptions{Group: "gold"})
	if err != nil {
		t.Fatal(err)
	}
	var waiting *bulkhead.Acquisition
	f := runFake(func(tb *fakeTB) {
		testkit.CheckBudget(tb, b)
		gold.AcquirePermissionAsync()
		waiting = gold.AcquirePermissionAsync()
	})
	wantFailure(t, f, "by group:", "Name:gold InUse:1", "Queued:1")
	waiting.Cancel()
	gold.FinishCall()
}

func TestCheckBudgetPanicsOnANilBudget(t *testing.T) {
	defer func() {
		if r := recover(); r != "testkit: CheckBudget called with a nil budget" {
			t.Errorf("panic %v", r)
		}
	}()
	testkit.CheckBudget(t, nil)
}
