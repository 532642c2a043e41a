package flowable_test

import (
	"testing"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestTheCallFinishedOfASubscriptionCarriesItsDurationFromTheGrant(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	b, err := bulkhead.New("partner", queueing, bulkhead.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, b)
	ev := testkit.RecordEvents(t, b)
	var emitters []flowable.Emitter[int]
	src := flowable.Create(func(e flowable.Emitter[int]) { emitters = append(emitters, e) })
	first, second := newRecorder[int](t, 10), newRecorder[int](t, 10)
	flowable.Bulkhead(b, src).Subscribe(first)  // granted at once
	flowable.Bulkhead(b, src).Subscribe(second) // queued
	clock.Advance(30 * time.Millisecond)
	emitters[0].Next(1)
	emitters[0].Complete() // gives the permit to second
	clock.Advance(time.Second)
	emitters[1].Next(2)
	emitters[1].Complete()
	var got []time.Duration
	for _, e := range ev.Events() {
		if e.Type == bulkhead.CallFinished {
			got = append(got, e.CallDuration)
		}
	}
	if len(got) != 2 || got[0] != 30*time.Millisecond || got[1] != time.Second {
		t.Fatalf("CallDurations %v, want [30ms 1s]", got)
	}
}
