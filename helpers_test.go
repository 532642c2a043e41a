package bulkhead_test

import (
	"runtime/metrics"
	"sync"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// newSemaphore builds a Semaphore or fails the test, and checks at cleanup
// that every permit came back and nobody is left waiting.
func newSemaphore(t testing.TB, name string, cfg bulkhead.Config, opts ...bulkhead.Option) *bulkhead.Semaphore {
	t.Helper()
	s, err := bulkhead.New(name, cfg, opts...)
	if err != nil {
		t.Fatalf("New(%q, %+v): %v", name, cfg, err)
	}
	testkit.CheckPermits(t, s)
	return s
}

// outcomes records the order in which acquisitions complete.
type outcomes struct {
	mu   sync.Mutex
	seen []string
}

func (o *outcomes) watch(label string, a *bulkhead.Acquisition) {
	a.OnDone(func(err error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if err != nil {
			o.seen = append(o.seen, label+":"+err.Error())
			return
		}
		o.seen = append(o.seen, label)
	})
}

func (o *outcomes) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.seen...)
}

// goroutinesCreated returns how many goroutines the runtime has started so
// far.
func goroutinesCreated() uint64 {
	sample := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}
