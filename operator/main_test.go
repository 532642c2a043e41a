package operator_test

import (
	"errors"
	"testing"

	"go.uber.org/goleak"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newBulkhead returns a Semaphore named "partner" with the permit-leak check
// registered, and a recorder of its events.
func newBulkhead(t testing.TB, cfg bulkhead.Config) (*bulkhead.Semaphore, *testkit.EventLog) {
	t.Helper()
	b, err := bulkhead.New("partner", cfg)
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, b)
	return b, testkit.RecordEvents(t, b)
}

var (
	errBoom = errors.New("boom")
	// noWait is a bulkhead of one permit that never queues.
	noWait = bulkhead.Config{MaxConcurrentCalls: 1}
)
