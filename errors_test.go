package bulkhead_test

import (
	"testing"

	"github.com/rxbulkhead/bulkhead"
)

func TestUnavailableIsAReasonOfItsOwn(t *testing.T) {
	if got := bulkhead.Unavailable.String(); got != "unavailable" {
		t.Fatalf("Unavailable.String() = %q", got)
	}
	for _, r := range []bulkhead.Reason{bulkhead.NoWait, bulkhead.QueueFull, bulkhead.WaitTimeout, bulkhead.Evicted} {
		if r == bulkhead.Unavailable {
			t.Fatalf("Unavailable equals %v", r)
		}
	}
	e := bulkhead.Event{Type: bulkhead.CallRejected, Name: "fleet", Reason: bulkhead.Unavailable}
	if got, want := e.String(), `0001-01-01T00:00:00Z bulkhead "fleet": rejected (unavailable)`; got != want {
		t.Fatalf("event %q, want %q", got, want)
	}
}
