package adaptive_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func finishedDurations(ev *testkit.EventLog) []time.Duration {
	var out []time.Duration
	for _, e := range ev.Events() {
		if e.Type == bulkhead.CallFinished {
			out = append(out, e.CallDuration)
		}
	}
	return out
}

func TestAdaptiveCallsReportTheirDurationOnEveryPath(t *testing.T) {
	alg := &fixed{next: 2}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, Window: adaptive.Window{MinSamples: 1000}})
	ev := testkit.RecordEvents(t, b.Semaphore())

	c, ok := b.TryAcquire()
	if !ok {
		t.Fatal("TryAcquire refused")
	}
	clock.Advance(10 * time.Millisecond)
	c.Finish(nil)

	c, err := b.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(20 * time.Millisecond)
	c.Finish(nil)

	// The plain interface, through an operator (bulkhead.CallTimer).
	var emit flowable.Emitter[int]
	sub := testkit.NewTestSubscriber[int]()
	flowable.Bulkhead(b, flowable.Create(func(e flowable.Emitter[int]) { emit = e })).Subscribe(sub)
	clock.Advance(30 * time.Millisecond)
	emit.Next(1)
	emit.Complete()
	sub.AssertResult(t, 1)

	if got := finishedDurations(ev); !slices.Equal(got, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond}) {
		t.Fatalf("CallDurations %v, want [10ms 20ms 30ms]", got)
	}
}
