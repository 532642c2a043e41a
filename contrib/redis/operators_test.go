package redis_test

import (
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// The core's operators take a bulkhead.Bulkhead: a fleet bulkhead works
// with them unchanged, waiting included.
func TestFlowableBulkheadRunsOverAFleetBulkhead(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	b := newBulkhead(t, s, "p", fleetConfig(1, 5*time.Second))
	first := testkit.NewTestSubscriber[int]()
	second := testkit.NewTestSubscriber[int]()
	flowable.Bulkhead(b, flowable.Just(1, 2, 3)).Subscribe(first)
	flowable.Bulkhead(b, flowable.Just(4, 5)).Subscribe(second)
	if !first.Await(outcomeTimeout) || !second.Await(outcomeTimeout) {
		t.Fatalf("not complete: %v / %v", first, second)
	}
	first.AssertResult(t, 1, 2, 3)
	second.AssertResult(t, 4, 5)
	first.AssertNoViolations(t)
	second.AssertNoViolations(t)
}
