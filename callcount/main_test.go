package callcount_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newSemaphore builds a Semaphore or fails the test, and checks at cleanup
// that every permit came back and nobody is left waiting.
func newSemaphore(t testing.TB, name string, cfg bulkhead.Config, opts ...bulkhead.Option) *bulkhead.Semaphore {
	t.Helper()
	s, err := bulkhead.New(name, cfg, opts...)
	if err != nil {
		t.Fatalf("New(%q, %v): %v", name, cfg, err)
	}
	testkit.CheckPermits(t, s)
	return s
}
