package testkit

import (
	"fmt"
	"testing"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// CheckBudget registers a t.Cleanup that fails the test if b holds a permit
// (Metrics().InUse != 0) or has a waiting call (Metrics().Queued != 0) when
// the test ends: the permit-leak check of a bulkhead.Budget, as
// CheckPermits is a Semaphore's (inside a testing/synctest bubble, a
// failing check is read again once the bubble is idle, as there). The
// failure names the budget, both counts and the classes (and groups, if
// any) that hold or wait. It panics if b is nil.
func CheckBudget(t testing.TB, b *bulkhead.Budget) {
	t.Helper()
	if b == nil {
		panic("testkit: CheckBudget called with a nil budget")
	}
	t.Cleanup(func() {
		t.Helper()
		var m bulkhead.BudgetMetrics
		if !leakedAfterSettling(func() bool {
			m = b.Metrics()
			return m.InUse != 0 || m.Queued != 0
		}) {
			return
		}
		var classes []bulkhead.ClassMetrics
		for _, c := range m.Classes {
			if c.InUse != 0 || c.Queued != 0 {
				classes = append(classes, c)
			}
		}
		var groups []bulkhead.GroupMetrics
		for _, g := range m.Groups {
			if g.InUse != 0 || g.Queued != 0 {
				groups = append(groups, g)
			}
		}
		byGroup := ""
		if len(groups) > 0 {
			byGroup = fmt.Sprintf("; by group: %+v", groups)
		}
		t.Errorf("testkit: budget %q: leaked at the end of the test: %d permit(s) in use, %d call(s) queued (want 0 and 0); by class: %+v%s",
			b.Name(), m.InUse, m.Queued, classes, byGroup)
	})
}
