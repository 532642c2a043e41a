package testkit_test

import (
	"errors"
	"log"
	"testing"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// The tests of this file are the code blocks of docs/testing.md
// (docs_test.go at the repository root keeps them equal).

// TestDocWaitTimeoutOnVirtualClock: "the third order waits 50 ms and then
// fails", on a VirtualClock.
func TestDocWaitTimeoutOnVirtualClock(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Time{})
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{
		MaxConcurrentCalls: 1,
		MaxWaitDuration:    50 * time.Millisecond,
		MaxQueuedCalls:     bulkhead.Unbounded,
	}, bulkhead.WithClock(clock))
	testkit.CheckPermits(t, walmart)

	walmart.TryAcquirePermission()            // the only permit is taken
	third := walmart.AcquirePermissionAsync() // queued

	clock.Advance(49 * time.Millisecond)
	if err := third.Err(); err != bulkhead.ErrPending {
		t.Errorf("after 49ms: %v, want still pending", err)
	}
	clock.Advance(time.Millisecond)
	var full *bulkhead.FullError
	if !errors.As(third.Err(), &full) || full.Reason != bulkhead.WaitTimeout {
		t.Errorf("after 50ms: %v, want a wait timeout", third.Err())
	}
	walmart.FinishCall()
}

// TestDocStepVerifier: a bulkheaded Flowable that waits for its permit, then
// honours the demand made after the grant.
func TestDocStepVerifier(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Time{})
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{
		MaxConcurrentCalls: 1,
		MaxWaitDuration:    50 * time.Millisecond,
		MaxQueuedCalls:     bulkhead.Unbounded,
	}, bulkhead.WithClock(clock))
	testkit.CheckPermits(t, walmart)
	walmart.TryAcquirePermission() // a call in flight

	testkit.Verify(flowable.Bulkhead(walmart, flowable.Just(1, 2)),
		testkit.InitialRequest(0), testkit.VerifierClock(clock)).
		ExpectSubscription().
		ExpectNoEvent(40*time.Millisecond). // advances clock: still waiting for the permit
		Then(walmart.FinishCall).           // the call in flight finishes
		ThenRequest(2).
		ExpectNext(1, 2).
		ExpectComplete().
		Run(t)
}

// TestDocCheckPermits: the three ways to register the permit-leak check.
func TestDocCheckPermits(t *testing.T) {
	walmart, _ := bulkhead.New("walmart", bulkhead.DefaultConfig())
	registry, err := bulkhead.NewRegistry(bulkhead.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	testkit.CheckPermits(t, walmart)           // one or more bulkheads
	testkit.CheckPermits(t, registry.All()...) // the bulkheads a registry holds now
	testkit.CheckRegistry(t, registry)         // ... and those created later in the test

	target, _ := registry.Get("target") // checked by CheckRegistry
	for _, bh := range []*bulkhead.Semaphore{walmart, target} {
		if bh.TryAcquirePermission() {
			bh.FinishCall() // given back: the checks pass
		}
	}
}
