package testkit_test

import (
	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// The budget's permit-leak check, registered right after the budget is
// created, catches a budget permit that was never given back.
func ExampleCheckBudget() {
	t := &printTB{} // in a real test: the test's t

	hub, _ := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{Size: 10, Classes: []bulkhead.ClassConfig{{Name: "batch"}}})
	testkit.CheckBudget(t, hub)

	acme, _ := hub.Flow("acme", bulkhead.PartnerOptions{})
	acme.Call(bulkhead.Class{}, 4).AcquirePermissionAsync() // given back by nobody

	t.endTest() // the testing package runs cleanups when the test ends
	// Output:
	// testkit: budget "hub": leaked at the end of the test: 4 permit(s) in use, 0 call(s) queued (want 0 and 0); by class: [{Name:batch InUse:4 Queued:0}]
}
