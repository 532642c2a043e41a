package completable_test

import (
	"context"
	"testing"
	"testing/synctest"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Promise (Bulkhead): "The permit goes back ... with b.ReleasePermission
// when the observer disposes after src was subscribed and before it
// terminated; src is then disposed." Disposing halfway gives the permit
// back at once, not when src stops: a FromFunc whose func does not return
// yet (it sees its context end) goes on running while a second subscription
// of the same Completable, queued behind it, is granted the only permit.
// Neither subscription is signalled by the first call's late result, and
// the permit is given back once per subscription.
func TestDisposingARunningCallGivesThePermitBackBeforeItsFuncReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxQueuedCalls: 1, MaxWaitDuration: bulkhead.NoTimeout})
		ev := testkit.RecordEvents(t, b)
		release := make(chan struct{})
		running := make(chan context.Context, 2)
		call := completable.Bulkhead(b, completable.FromFunc(func(ctx context.Context) error {
			running <- ctx
			<-release // a call that stops late, whatever its context does
			return nil
		}))
		first, second := newRecorder(t), newRecorder(t)
		call.Subscribe(first)
		firstCtx := <-running
		call.Subscribe(second) // queued behind the first
		synctest.Wait()
		if len(running) != 0 {
			t.Fatal("the second subscription ran while the first held the only permit")
		}
		first.Dispose()
		synctest.Wait()
		if firstCtx.Err() == nil {
			t.Fatal("Dispose did not cancel the running func's context")
		}
		// ReleasePermission publishes no event: the queued call's grant
		// shows that the permit came back, and no CallFinished that it was
		// not FinishCall.
		if ev.Count(bulkhead.CallPermitted) != 2 || ev.Count(bulkhead.CallFinished) != 0 {
			t.Fatalf("after Dispose: events %v, want the permit back with ReleasePermission and the second call granted", ev.Strings())
		}
		<-running // the second is granted while the first func still runs
		close(release)
		second.wait()
		synctest.Wait()
		if first.terminated() || !first.disposable().IsDisposed() {
			t.Fatal("the disposed subscription was signalled")
		}
		if completed, err := second.result(); !completed || err != nil {
			t.Fatalf("second subscription: completed=%v, %v", completed, err)
		}
		if ev.Count(bulkhead.CallFinished) != 1 || b.Metrics().InFlightCalls != 0 {
			t.Fatalf("events %v, want one FinishCall (the second call's)", ev.Strings())
		}
	})
}
