package ro_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/samber/ro"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bro "github.com/rxbulkhead/bulkhead/contrib/ro"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// endingObservable is an ro.Observable not built by ro, whose subscribe
// ends with end (a panic ro does not catch, or runtime.Goexit).
type endingObservable struct{ end func() }

func (o endingObservable) Subscribe(dst ro.Observer[int]) ro.Subscription {
	return o.SubscribeWithContext(context.Background(), dst)
}

func (o endingObservable) SubscribeWithContext(context.Context, ro.Observer[int]) ro.Subscription {
	o.end()
	return ro.NewSubscription(nil)
}

// A source whose subscribe panics outside ro's own catch, or calls
// runtime.Goexit (t.FailNow in a fake source), granted at once or after a
// wait: the permit comes back.
func TestASourceWhoseSubscribePanicsOrExitsGivesThePermitBack(t *testing.T) {
	for name, end := range map[string]func(){
		"panic":  func() { panic("source") },
		"Goexit": runtime.Goexit,
	} {
		t.Run(name+"/granted at once", func(t *testing.T) {
			b, _ := partner(t, 1, 0)
			for range 3 {
				testkit.RunToEnd(func() { bro.Bulkhead[int](b, endingObservable{end}).Subscribe(ro.NoopObserver[int]()) })
				require.Equal(t, 0, b.Metrics().InFlightCalls, "the permit of a source that ended with %s", name)
			}
		})
		t.Run(name+"/granted after a wait", func(t *testing.T) {
			b, _ := partner(t, 1, time.Hour)
			require.True(t, b.TryAcquirePermission())
			bro.Bulkhead[int](b, endingObservable{end}).Subscribe(ro.NoopObserver[int]())
			require.Equal(t, 1, b.Metrics().QueuedCalls)
			got := testkit.RunToEnd(b.FinishCall) // the grant subscribes the source here
			assert.NotNil(t, got, "the source's %s must go on", name)
			m := b.Metrics()
			assert.Zero(t, m.InFlightCalls+m.QueuedCalls, "%+v", m)
		})
	}
}
