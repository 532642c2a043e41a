package pool_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
)

// A Pool is the right bulkhead for calls that block regardless of their
// context: the call blocks one of the pool's workers, never the caller.
func ExamplePool_blockingCall() {
	p, err := pool.New("legacy-soap", pool.Config{
		MaxWorkers: 8, CoreWorkers: 2, QueueCapacity: 32, KeepAlive: time.Minute,
		MaxQueueWait: 200 * time.Millisecond,
	})
	if err != nil {
		panic(err)
	}
	defer p.Close(context.Background())

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	f := pool.Submit(ctx, p, func(context.Context) (float64, error) {
		return legacyQuote("ABC-123") // blocks; ignores its ctx
	})
	price, err := f.Get(ctx) // returns when the task ends or ctx does
	fmt.Println(price, err)
	// Output: 10.5 <nil>
}

// uncoordinatedSoapBulkheads is the other anti-pattern of docs/guide.md: two
// limits on one dependency that disagree.
func uncoordinatedSoapBulkheads() (*bulkhead.Semaphore, *pool.Pool) {
	s, _ := bulkhead.New("soap", bulkhead.Config{MaxConcurrentCalls: 50, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded})
	p, _ := pool.New("soap", pool.Config{MaxWorkers: 8, QueueCapacity: 10, MaxQueueWait: bulkhead.NoTimeout})
	// handler: s.AcquirePermission, then pool.Submit(ctx, p, call).Get(ctx)
	return s, p
}

// TestGuideSemaphoreInFrontOfPoolRejectsPermitHolders pins the figures of the
// guide's "uncoordinated sizes" anti-pattern: of 50 permit holders, 8 run, 10
// wait in the pool's queue and 32 are rejected by the pool at once.
func TestGuideSemaphoreInFrontOfPoolRejectsPermitHolders(t *testing.T) {
	s, p := uncoordinatedSoapBulkheads()
	block := make(chan struct{})
	var accepted []*pool.Future[int]
	rejected := 0
	for range 50 {
		if !s.TryAcquirePermission() {
			t.Fatal("the semaphore refused one of its 50 permits")
		}
		f := pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-block; return 1, nil })
		if errors.Is(f.Err(), bulkhead.ErrBulkheadFull) {
			rejected++
			s.ReleasePermission() // the call did not run
			continue
		}
		accepted = append(accepted, f)
	}
	pm, sm := p.Metrics(), s.Metrics()
	if rejected != 32 || pm.ActiveWorkers != 8 || pm.QueueDepth != 10 || sm.InFlightCalls != 18 {
		t.Errorf("rejected %d, running %d, queued %d, semaphore in flight %d; want 32, 8, 10, 18",
			rejected, pm.ActiveWorkers, pm.QueueDepth, sm.InFlightCalls)
	}

	close(block)
	for _, f := range accepted {
		if _, err := f.Get(context.Background()); err != nil {
			t.Error(err)
		}
		s.FinishCall()
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := s.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
		t.Errorf("leaked: %+v", m)
	}
}
