package rxtest

import (
	"slices"
	"sync"
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
	b, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: permits, MaxWaitDuration: wait})
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, b)
	ev := &Events{}
	t.Cleanup(b.OnEvent(ev.add))
	return b, ev
}

// Short names of the event types an Events log holds.
const (
	Permitted = bulkhead.CallPermitted
	Rejected  = bulkhead.CallRejected
	Finished  = bulkhead.CallFinished
	Cancelled = bulkhead.CallCancelled
)

// Events records the types of a bulkhead's events in order. It is safe for
// concurrent use.
type Events struct {
	mu sync.Mutex
	ts []bulkhead.EventType
}

func (e *Events) add(ev bulkhead.Event) {
	e.mu.Lock()
	e.ts = append(e.ts, ev.Type)
	e.mu.Unlock()
}

// List returns a copy of the event types recorded so far.
func (e *Events) List() []bulkhead.EventType {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.ts)
}
