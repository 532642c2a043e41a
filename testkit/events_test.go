package testkit_test

import (
	"slices"
	"testing"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestRecordEventsKeepsEveryEventInOrder(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	bh, err := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	log := testkit.RecordEvents(t, bh)
	bh.TryAcquirePermission()
	bh.TryAcquirePermission()
	waiter := bh.AcquirePermissionAsync()
	waiter.Cancel()
	clock.Advance(time.Millisecond)
	bh.FinishCall()

	if got, want := log.Strings(), []string{"permitted", "rejected(no wait)", "cancelled", "finished"}; !slices.Equal(got, want) {
		t.Errorf("Strings() = %v, want %v", got, want)
	}
	if got, want := log.Types(), []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallRejected, bulkhead.CallCancelled, bulkhead.CallFinished}; !slices.Equal(got, want) {
		t.Errorf("Types() = %v, want %v", got, want)
	}
	if n := log.Count(bulkhead.CallRejected); n != 1 {
		t.Errorf("Count(CallRejected) = %d, want 1", n)
	}
	events := log.Events()
	if events[3].Name != "walmart" || !events[3].Time.Equal(time.Unix(0, 0).Add(time.Millisecond)) {
		t.Errorf("last event %+v: want bulkhead walmart at 1ms on the virtual clock", events[3])
	}
	events[0].Name = "changed"
	if log.Events()[0].Name != "walmart" {
		t.Error("Events() must return a copy")
	}
}

func TestRecordEventsStopsAtCleanup(t *testing.T) {
	bh, err := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	if err != nil {
		t.Fatal(err)
	}
	var log *testkit.EventLog
	f := runFake(func(tb *fakeTB) { log = testkit.RecordEvents(tb, bh) })
	wantPass(t, f)
	bh.TryAcquirePermission()
	bh.FinishCall()
	if n := len(log.Events()); n != 0 {
		t.Errorf("%d events recorded after the cleanup, want 0", n)
	}
}

func TestRecordEventsPanicsOnNilSource(t *testing.T) {
	defer func() {
		if r := recover(); r != "testkit: RecordEvents called with a nil EventSource" {
			t.Errorf("recovered %v", r)
		}
	}()
	var s *bulkhead.Semaphore
	testkit.RecordEvents(t, s)
}
