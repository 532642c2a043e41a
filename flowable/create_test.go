package flowable_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/rxbulkhead/bulkhead/flowable"
)

func TestCreateTryNextHonoursDemand(t *testing.T) {
	var em flowable.Emitter[int]
	r := newRecorder[int](t, 0)
	flowable.Create(func(e flowable.Emitter[int]) { em = e }).Subscribe(r)
	if em.TryNext(1) {
		t.Fatal("TryNext delivered without demand")
	}
	r.Request(2)
	if em.Requested() != 2 {
		t.Fatalf("Requested() = %d, want 2", em.Requested())
	}
	if !em.TryNext(1) || !em.TryNext(2) || em.TryNext(3) {
		t.Fatal("TryNext did not deliver exactly the 2 requested")
	}
	em.Complete()
	em.Complete()
	em.Error(errors.New("late"))
	items, err, completed := r.snapshot()
	if !slices.Equal(items, []int{1, 2}) || err != nil || !completed {
		t.Fatalf("got %v, %v, completed=%v", items, err, completed)
	}
	select {
	case <-em.Done():
	default:
		t.Fatal("Done not closed after Complete")
	}
}

func TestCreateNextWaitsForDemand(t *testing.T) {
	var wg sync.WaitGroup
	r := newRecorder[int](t, 0)
	flowable.Create(func(e flowable.Emitter[int]) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				if !e.Next(i) {
					return
				}
			}
			e.Complete()
		}()
	}).Subscribe(r)
	for range 100 {
		r.Request(1) // the recorder fails if the producer ran ahead
	}
	r.wait()
	wg.Wait()
	if items, _, _ := r.snapshot(); !slices.Equal(items, seq(0, 100)) {
		t.Fatalf("got %v", items)
	}
}

func TestCreateCancelUnblocksNextAndClosesDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		result := make(chan bool, 1)
		var em flowable.Emitter[int]
		r := newRecorder[int](t, 1)
		flowable.Create(func(e flowable.Emitter[int]) {
			em = e
			go func() {
				e.Next(0)
				result <- e.Next(1) // no demand: blocks until Cancel
			}()
		}).Subscribe(r)
		synctest.Wait() // the producer is durably blocked in the second Next
		select {
		case ok := <-result:
			t.Fatalf("second Next returned %v without demand", ok)
		default:
		}
		r.Cancel()
		if <-result {
			t.Fatal("Next reported a delivery after Cancel")
		}
		<-em.Done()
		if items, _, _ := r.snapshot(); len(items) != 1 {
			t.Fatalf("got %v", items)
		}
	})
}

func TestCreateBadRequestDuringOnNextIsSignalledAfterIt(t *testing.T) {
	var em flowable.Emitter[int]
	r := newRecorder[int](t, 1)
	r.onNext = func(r *recorder[int], _ int) { r.Request(0) }
	flowable.Create(func(e flowable.Emitter[int]) { em = e }).Subscribe(r)
	if !em.TryNext(7) {
		t.Fatal("TryNext failed with demand")
	}
	items, err, _ := r.snapshot() // the recorder fails on an overlapping OnError
	if !slices.Equal(items, []int{7}) || !errors.Is(err, flowable.ErrNonPositiveRequest) {
		t.Fatalf("got %v, %v", items, err)
	}
	if em.TryNext(8) {
		t.Fatal("TryNext delivered after the error")
	}
}

// TestCreateBadRequestRacingProducerIsSerial hammers the only concurrency
// the emitter has to serialise: the producer's OnNext against the OnError
// of a Request(0) made from another goroutine.
func TestCreateBadRequestRacingProducerIsSerial(t *testing.T) {
	for range 2000 {
		var em flowable.Emitter[int]
		r := newRecorder[int](t, 1000)
		flowable.Create(func(e flowable.Emitter[int]) { em = e }).Subscribe(r)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; em.TryNext(i); i++ {
			}
		}()
		go func() { defer wg.Done(); r.Request(-1) }()
		wg.Wait()
		r.wait()
		if _, err, _ := r.snapshot(); !errors.Is(err, flowable.ErrNonPositiveRequest) {
			t.Fatalf("got %v", err)
		}
	}
}
