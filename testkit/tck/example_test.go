package tck_test

import (
	"testing"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/testkit"
	"github.com/rxbulkhead/bulkhead/testkit/tck"
)

// ExampleVerifyPublisher holds a Publisher to the Reactive Streams rules:
// call it from a test, with a factory that builds a fresh publisher (and
// whatever it needs, such as a bulkhead) for each check.
func ExampleVerifyPublisher() {
	// In a test file:
	verify := func(t *testing.T) {
		tck.VerifyPublisher(t, func(t *testing.T) flowable.Publisher[int] {
			sem, err := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 2})
			if err != nil {
				t.Fatal(err)
			}
			testkit.CheckPermits(t, sem) // no permit may leak from any check
			return flowable.Bulkhead(sem, flowable.Range(1, 10))
		}, tck.Options{Elements: 10, Terminal: tck.Completes})
	}
	_ = verify
}
