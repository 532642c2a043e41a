package completable_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// A FromFunc func that calls runtime.Goexit (t.FailNow in a fake call)
// behind a Bulkhead: the observer gets OnError(ErrGoexit) and the permit
// comes back, where before nothing was signalled and the permit stayed.
func TestFromFuncThatExitsSignalsErrGoexitAndGivesThePermitBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 1})
		if err != nil {
			t.Fatal(err)
		}
		testkit.CheckPermits(t, b)
		call := completable.Bulkhead(b, completable.FromFunc(func(context.Context) error { runtime.Goexit(); return nil }))
		for range 3 { // the limit is 1: each call must have given its permit back
			ctx, cancel := context.WithTimeout(context.Background(), defaultTestTimeout)
			err := completable.Await(ctx, call)
			cancel()
			if !errors.Is(err, completable.ErrGoexit) {
				t.Fatalf("Await = %v, want ErrGoexit", err)
			}
			if m := b.Metrics(); m.InFlightCalls != 0 {
				t.Fatalf("%d in flight after the func exited, want 0", m.InFlightCalls)
			}
		}
	})
}

// A source whose Subscribe calls runtime.Goexit once granted: the
// subscription is disposed, the permit comes back.
func TestBulkheadSourceWhoseSubscribeExitsGivesThePermitBack(t *testing.T) {
	b, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 1})
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, b)
	for range 3 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			completable.Bulkhead(b, exiting{}).Subscribe(newRecorder(t))
		}()
		<-done
		if m := b.Metrics(); m.InFlightCalls != 0 {
			t.Fatalf("%d in flight after the source exited, want 0", m.InFlightCalls)
		}
	}
}

type exiting struct{}

func (exiting) Subscribe(completable.Observer) { runtime.Goexit() }
