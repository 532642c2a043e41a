package ro_test

// The tests in this file hold the operator to samber/ro's observer
// contract as a hostile subscriber or source would break it: an observer
// that panics, unsubscribes inside its own callback or subscribes again
// from there; a source (not built by ro, so nothing filters it) that
// signals after its end or emits from several goroutines at once. The
// promise each time (package doc): "The permit is given back exactly
// once", and no permit is lost.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/samber/ro"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bulkhead "github.com/rxbulkhead/bulkhead"
	bro "github.com/rxbulkhead/bulkhead/contrib/ro"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// rawSource is an ro.Observable not built by ro: subscribe calls dst
// directly, with nothing between them to drop a signal after the end or to
// serialise concurrent ones.
type rawSource func(dst ro.Observer[int])

func (s rawSource) Subscribe(dst ro.Observer[int]) ro.Subscription {
	return s.SubscribeWithContext(context.Background(), dst)
}

func (s rawSource) SubscribeWithContext(_ context.Context, dst ro.Observer[int]) ro.Subscription {
	s(dst)
	return ro.NewSubscription(nil)
}

// A source that goes on after its Complete (Next, Error, Complete again)
// gives the permit back once, at its first end; the subscriber sees the
// values before it and one Complete.
func TestHostileSourceThatSignalsAfterItsEndGivesThePermitBackOnce(t *testing.T) {
	b, ev := partner(t, 2, 0)
	var c collector
	bro.Bulkhead[int](b, rawSource(func(dst ro.Observer[int]) {
		dst.Next(1)
		dst.Complete()
		dst.Next(2)
		dst.Error(errors.New("after the end"))
		dst.Complete()
	})).Subscribe(c.observer())
	vs, err, done := c.result()
	assert.Equal(t, []int{1}, vs)
	assert.NoError(t, err)
	assert.True(t, done)
	assert.Equal(t, []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallFinished}, ev.Types())
	assert.Equal(t, 2, b.Metrics().AvailableConcurrentCalls)
}

// A source that emits from eight goroutines at once, then ends with an
// Error racing a Complete, gives its permit back exactly once.
func TestHostileSourceEmittingFromSeveralGoroutinesGivesThePermitBackOnce(t *testing.T) {
	b, ev := partner(t, 2, 0)
	var values atomic.Int64
	var ends atomic.Int64
	bro.Bulkhead[int](b, rawSource(func(dst ro.Observer[int]) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for i := range 100 {
					dst.Next(i)
				}
			})
		}
		wg.Wait()
		wg.Go(func() { dst.Error(errors.New("boom")) })
		wg.Go(func() { dst.Complete() })
		wg.Wait()
	})).Subscribe(ro.NewObserver(
		func(int) { values.Add(1) },
		func(error) { ends.Add(1) },
		func() { ends.Add(1) },
	))
	assert.Equal(t, int64(800), values.Load())
	assert.Equal(t, int64(1), ends.Load(), "one end reaches the subscriber")
	assert.Equal(t, []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallFinished}, ev.Types())
	assert.Equal(t, 2, b.Metrics().AvailableConcurrentCalls)
}

// An observer whose Next panics: ro's own observer turns the panic into
// its Error, and the source stays subscribed (ro does not unsubscribe it),
// so the permit is held while it runs, and comes back with FinishCall at
// Unsubscribe ("on Unsubscribe after the grant with FinishCall if a value
// had been delivered"). An observer not built by ro that panics in Next
// panics inside ro.Just, which fails: the permit comes back at once.
func TestHostileObserverThatPanicsLosesNoPermit(t *testing.T) {
	t.Run("ro observer, source still running", func(t *testing.T) {
		b, ev := partner(t, 1, 0)
		var errs []error
		src := ro.NewObservable(func(dst ro.Observer[int]) ro.Teardown { dst.Next(1); return nil })
		sub := bro.Bulkhead(b, src).Subscribe(ro.NewObserver(func(int) { panic("boom") }, func(err error) { errs = append(errs, err) }, func() {}))
		require.Len(t, errs, 1)
		assert.ErrorContains(t, errs[0], "boom")
		assert.Equal(t, 1, b.Metrics().InFlightCalls, "the source still runs")
		sub.Unsubscribe()
		assert.Equal(t, []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallFinished}, ev.Types())
	})
	t.Run("raw observer", func(t *testing.T) {
		b, ev := partner(t, 1, 0)
		testkit.RunToEnd(func() {
			bro.Bulkhead(b, ro.Just(1, 2)).Subscribe(panickingObserver{})
		})
		assert.Equal(t, []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallFinished}, ev.Types())
		assert.Zero(t, b.Metrics().InFlightCalls)
	})
}

// panickingObserver is an ro.Observer not built by ro whose Next panics.
type panickingObserver struct{}

func (panickingObserver) Next(int)                                {}
func (panickingObserver) NextWithContext(context.Context, int)    { panic("boom") }
func (panickingObserver) Error(error)                             {}
func (panickingObserver) ErrorWithContext(context.Context, error) {}
func (panickingObserver) Complete()                               {}
func (panickingObserver) CompleteWithContext(context.Context)     {}
func (panickingObserver) IsClosed() bool                          { return false }
func (panickingObserver) HasThrown() bool                         { return false }
func (panickingObserver) IsCompleted() bool                       { return false }

// An observer that unsubscribes inside its own Next, while the source
// goes on emitting and then completes: the permit comes back once, at the
// Unsubscribe (FinishCall: a value was delivered), and nothing reaches the
// observer after it.
func TestHostileObserverUnsubscribingInsideItsNextGivesThePermitBackOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := partner(t, 2, 0)
		emit := make(chan struct{})
		src := ro.NewObservable(func(dst ro.Observer[int]) ro.Teardown {
			go func() {
				<-emit
				for i := range 5 {
					dst.Next(i)
				}
				dst.Complete()
			}()
			return nil
		})
		var sub ro.Subscription
		var got []int
		completed := false
		sub = bro.Bulkhead(b, src).Subscribe(ro.NewObserver(
			func(v int) { got = append(got, v); sub.Unsubscribe() },
			func(error) {},
			func() { completed = true },
		))
		close(emit)
		synctest.Wait()
		assert.Equal(t, []int{0}, got)
		assert.False(t, completed)
		assert.Equal(t, []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallFinished}, ev.Types())
		assert.Equal(t, 2, b.Metrics().AvailableConcurrentCalls)
	})
}

// An observer that subscribes the same Observable again from inside its
// Next (queued: the one permit is held) and from inside its Complete (the
// permit is back by then: granted at once, nested) deadlocks nothing and
// loses no permit: every subscription runs to its end.
func TestHostileObserverSubscribingAgainFromItsCallbacksLosesNoPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := partner(t, 1, time.Hour)
		obs := bro.Bulkhead(b, ro.Just(1))
		var mu sync.Mutex
		var ends []string
		end := func(s string) { mu.Lock(); ends = append(ends, s); mu.Unlock() }
		inner := func(name string) ro.Observer[int] {
			return ro.NewObserver(func(int) {}, func(err error) { end(name + ": " + err.Error()) }, func() { end(name) })
		}
		obs.Subscribe(ro.NewObserver(
			func(int) { obs.Subscribe(inner("from Next")) },
			func(err error) { end("outer: " + err.Error()) },
			func() { obs.Subscribe(inner("from Complete")); end("outer") },
		))
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		assert.ElementsMatch(t, []string{"from Next", "from Complete", "outer"}, ends)
		assert.Equal(t, 3, ev.Count(bulkhead.CallPermitted))
		assert.Equal(t, 3, ev.Count(bulkhead.CallFinished))
		assert.Zero(t, b.Metrics().InFlightCalls+b.Metrics().QueuedCalls)
	})
}
