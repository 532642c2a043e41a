package rxtest

import (
	"testing"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Partner returns a Semaphore named "partner" with permits permits and a
// maximum wait of wait, the permit-leak check (testkit.CheckPermits)
// registered on t, and a log of its events.
func Partner(t testing.TB, permits int, wait time.Duration) (*bulkhead.Semaphore, *Events) {
	t.Helper()
	b, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: permits, MaxWaitDuration: wait, MaxQueuedCalls: bulkhead.Unbounded})
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, b)
	return b, testkit.RecordEvents(t, b)
}

// Short names of the event types an Events log holds.
const (
	Permitted = bulkhead.CallPermitted
	Rejected  = bulkhead.CallRejected
	Finished  = bulkhead.CallFinished
	Cancelled = bulkhead.CallCancelled
)

// Events is the log of a Partner's events.
type Events = testkit.EventLog
