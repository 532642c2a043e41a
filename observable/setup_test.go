package observable_test

import (
	"testing"

	"go.uber.org/goleak"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The events of rxtest.Partner's log, by short name.
const (
	permitted = bulkhead.CallPermitted
	rejected  = bulkhead.CallRejected
	finished  = bulkhead.CallFinished
	cancelled = bulkhead.CallCancelled
)
