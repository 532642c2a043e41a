package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reactivex/rxgo/v2"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/observable"
)

// The functions of this file are the code blocks of README.md and
// docs/guide.md (docs_test.go keeps them equal).

// sendOrder stands for the call to a partner: a cold rxgo source that sends
// one order when observed and emits the partner's answer.
func sendOrder(_ context.Context, next chan<- rxgo.Item) {
	next <- rxgo.Of("order 850 accepted")
}

// The README's quick start: one bulkhead per partner from a registry, and an
// rxgo pipeline that takes a permit each time it is observed.
func Example_quickStart() {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{
		MaxConcurrentCalls: 20,                    // permits per partner
		MaxWaitDuration:    50 * time.Millisecond, // how long a call may wait
		MaxQueuedCalls:     100,                   // how many may wait
	})
	if err != nil {
		log.Fatal(err)
	}
	walmart, err := reg.Get("walmart")
	if err != nil {
		log.Fatal(err)
	}
	orders := observable.Bulkhead(walmart, rxgo.Defer([]rxgo.Producer{sendOrder}))
	for item := range orders.Observe() { // the permit is taken here, never blocking
		if errors.Is(item.E, bulkhead.ErrBulkheadFull) {
			log.Printf("walmart is saturated: %v", item.E)
			continue
		}
		fmt.Println(item.V)
	}
	// Output: order 850 accepted
}

// DefaultConfig is resilience4j's: 25 permits, no wait, no queue bound, FIFO.
func ExampleDefaultConfig() {
	fmt.Printf("%+v\n", bulkhead.DefaultConfig())
	// Output: {MaxConcurrentCalls:25 MaxWaitDuration:0s MaxQueuedCalls:Unbounded QueueOrder:FIFO}
}

// A rejection says which bulkhead refused the call and why.
func ExampleFullError() {
	bh, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	bh.TryAcquirePermission() // the only permit is taken

	err := bh.AcquirePermissionAsync().Err() // full, and MaxWaitDuration is 0
	var full *bulkhead.FullError
	if errors.As(err, &full) {
		fmt.Println(full.Name, full.Reason)
	}
	fmt.Println(errors.Is(err, bulkhead.ErrBulkheadFull))
	fmt.Println(err)
	bh.ReleasePermission()
	// Output:
	// walmart no wait
	// true
	// bulkhead "walmart": full, does not permit further calls (no wait)
}

// FinishCall gives back the permit of a call that ran (CallFinished);
// ReleasePermission gives back one whose call never ran (no event).
func ExampleSemaphore_ReleasePermission() {
	bh, _ := bulkhead.New("carrefour", bulkhead.Config{MaxConcurrentCalls: 2})
	bh.OnEvent(func(e bulkhead.Event) { fmt.Println("event:", e.Type) })

	if bh.TryAcquirePermission() {
		// ... the call to carrefour ran ...
		bh.FinishCall()
	}
	if bh.TryAcquirePermission() {
		// ... the order was invalid: nothing was sent ...
		bh.ReleasePermission()
	}
	fmt.Println("in flight:", bh.Metrics().InFlightCalls)
	// Output:
	// event: permitted
	// event: finished
	// event: permitted
	// in flight: 0
}

// A context that ends while AcquirePermission waits: ctx.Err() comes back,
// no permit is held and nobody is left in the queue.
func ExampleSemaphore_AcquirePermission_contextEnds() {
	bh, _ := bulkhead.New("tesco", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded})
	bh.TryAcquirePermission() // a call in flight

	ctx, cancel := context.WithCancel(context.Background())
	go cancel() // the caller gives up (before or while the call waits)
	err := bh.AcquirePermission(ctx)
	fmt.Println(err)
	m := bh.Metrics()
	fmt.Println("in flight:", m.InFlightCalls, "queued:", m.QueuedCalls)
	bh.FinishCall()
	// Output:
	// context canceled
	// in flight: 1 queued: 0
}

// Waiting on Done with a patience of one's own: Cancel withdraws the
// request, unless the permit was granted in the meantime, which the caller
// then owns.
func ExampleAcquisition_Done() {
	bh, _ := bulkhead.New("aldi", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded})
	bh.TryAcquirePermission()        // a call in flight
	a := bh.AcquirePermissionAsync() // queued behind it
	go bh.FinishCall()               // the call in flight finishes, on another goroutine

	select {
	case <-a.Done():
		if err := a.Err(); err != nil {
			fmt.Println("rejected:", err)
			return
		}
		defer bh.FinishCall()
		fmt.Println("granted after a wait")
	case <-time.After(10 * time.Second): // the caller's own patience
		if !a.Cancel() && a.Err() == nil {
			bh.ReleasePermission() // granted just as we gave up
		}
		fmt.Println("gave up")
	}
	// Output: granted after a wait
}

// partnerClient stands for a client that honours its context, like
// net/http or gRPC.
type partnerClient struct{}

func (partnerClient) Send(ctx context.Context, order string) error {
	fmt.Println("sent", order)
	return ctx.Err()
}

var client partnerClient

// sendViaSemaphore is the Semaphore around a call that honours its context.
func sendViaSemaphore(ctx context.Context, s *bulkhead.Semaphore, order string) error {
	if err := s.AcquirePermission(ctx); err != nil {
		return err // a *bulkhead.FullError, or ctx.Err()
	}
	defer s.FinishCall()
	return client.Send(ctx, order) // returns when ctx ends
}

// A Semaphore is the right bulkhead for calls that honour their context.
func ExampleSemaphore_AcquirePermission_contextAwareCall() {
	s, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 20, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded})
	err := sendViaSemaphore(context.Background(), s, "PO-1")
	fmt.Println(err, s.Metrics().InFlightCalls)
	// Output:
	// sent PO-1
	// <nil> 0
}

// quoteBehindSemaphore is the anti-pattern of docs/guide.md: a Semaphore
// around a call that ignores its context.
func quoteBehindSemaphore(ctx context.Context, s *bulkhead.Semaphore, legacy func(sku string) (float64, error), sku string) (float64, error) {
	if err := s.AcquirePermission(ctx); err != nil {
		return 0, err
	}
	defer s.FinishCall()
	return legacy(sku) // ignores ctx: the permit is held until it returns
}

// TestGuideSemaphoreAroundBlockingCodeHoldsThePermitPastTheDeadline pins the
// guide's claim: the caller's context ends, the call goes on, and the permit
// stays held, so the next caller waits for nothing and times out.
func TestGuideSemaphoreAroundBlockingCodeHoldsThePermitPastTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := bulkhead.New("legacy", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded})
		if err != nil {
			t.Fatal(err)
		}
		hang := make(chan struct{})
		legacy := func(string) (float64, error) { <-hang; return 1, nil } // a partner that hangs

		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		first := make(chan error, 1)
		go func() { _, err := quoteBehindSemaphore(ctx, s, legacy, "ABC-123"); first <- err }()
		time.Sleep(100 * time.Millisecond) // bubble time: the caller's deadline has passed
		synctest.Wait()
		if ctx.Err() == nil {
			t.Fatal("the caller's context should have ended")
		}
		if got := s.Metrics().InFlightCalls; got != 1 {
			t.Errorf("permits held after the caller's deadline = %d, want 1 (the stuck call keeps it)", got)
		}

		_, err = quoteBehindSemaphore(context.Background(), s, legacy, "DEF-456")
		var full *bulkhead.FullError
		if !errors.As(err, &full) || full.Reason != bulkhead.WaitTimeout {
			t.Errorf("the next caller got %v, want a wait timeout", err)
		}

		close(hang) // the partner answers at last
		if err := <-first; err != nil {
			t.Errorf("first call: %v", err)
		}
		if m := s.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			t.Errorf("leaked: %+v", m)
		}
	})
}
