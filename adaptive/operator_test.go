package adaptive_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// An adaptive Bulkhead is a bulkhead.Bulkhead: the flowable operator takes
// it unchanged, its calls are timed through the plain interface and the
// limit the controller applies is the one the operator waits on.
func TestFlowableOperatorRunsOnAnAdaptiveBulkhead(t *testing.T) {
	alg := &fixed{next: 2}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, Window: adaptive.Window{MinSamples: 1}})

	held, _ := b.TryAcquire() // the only permit
	first := testkit.NewTestSubscriber[string]()
	flowable.Bulkhead(b, flowable.Just("order-1")).Subscribe(first)
	second := testkit.NewTestSubscriber[string]()
	flowable.Bulkhead(b, flowable.Just("order-2")).Subscribe(second)
	assert.Equal(t, 2, b.Metrics().QueuedCalls)

	clock.Advance(150 * ms)
	// The window closes: the limit grows to 2 and both queued subscriptions
	// run (the operator gives their permits back with FinishCall).
	held.Finish(nil)
	first.AssertResult(t, "order-1")
	second.AssertResult(t, "order-2")
	assert.Equal(t, 2, b.Semaphore().Config().MaxConcurrentCalls)
	assert.Equal(t, 0, b.Stats().InFlight)
	assert.Len(t, alg.samples, 1)
}
