package flowable_test

import (
	"slices"
	"testing"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
)

// panickingOnError is a subscriber whose OnError panics.
type panickingOnError struct{ *recorder[int] }

func (p panickingOnError) OnError(error) { panic("evicted subscriber") }

func subscribeRecovering(pub flowable.Publisher[int], s flowable.Subscriber[int]) (panicked any) {
	defer func() { panicked = recover() }()
	pub.Subscribe(s)
	return nil
}

// Issue 24, item 3, through the operator: the evicted subscriber's OnError
// panics inside the newcomer's Subscribe.
func TestPanicInEvictedSubscriberStrandsNoPermit(t *testing.T) {
	b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1, QueueOrder: bulkhead.LIFO})
	if !b.TryAcquirePermission() {
		t.Fatal("permit not free")
	}
	src := newProbe(flowable.Range(0, 3))
	pub := flowable.Bulkhead(b, src)
	pub.Subscribe(panickingOnError{newRecorder[int](t, 10)})
	newcomer := newRecorder[int](t, 10)

	panicked := subscribeRecovering(pub, newcomer)

	if panicked != "evicted subscriber" {
		t.Fatalf("Subscribe panicked with %v, want the evicted subscriber's panic", panicked)
	}
	if q := b.Metrics().QueuedCalls; q != 0 {
		t.Fatalf("%d calls left queued for a subscription whose Subscribe panicked", q)
	}
	if _, err, done := newcomer.snapshot(); err != nil || done {
		t.Fatalf("withdrawn newcomer got a terminal signal: %v, %v", err, done)
	}
	newcomer.Cancel() // harmless: nothing left to withdraw
	b.FinishCall()
	if m := b.Metrics(); m.InFlightCalls != 0 {
		t.Fatalf("InFlightCalls %d after the held permit came back, want 0", m.InFlightCalls)
	}
	if src.subscribed.Load() != 0 {
		t.Fatal("source subscribed for a withdrawn subscription")
	}
	next := newRecorder[int](t, 10)
	pub.Subscribe(next)
	if items, err, done := next.snapshot(); !slices.Equal(items, []int{0, 1, 2}) || err != nil || !done {
		t.Fatalf("next subscription: %v, %v, completed=%v", items, err, done)
	}
}
