package observable_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reactivex/rxgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
	"github.com/rxbulkhead/bulkhead/observable"
)

// The behaviour every bulkhead operator over rxgo shares: release rules,
// rejection, queueing, FIFO, withdrawal, options, grant racing cancel.
func TestBehavesAsABulkheadOperator(t *testing.T) {
	rxtest.Suite{Apply: func(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) rxgo.Iterable {
		return observable.Bulkhead(b, src, opts...)
	}}.Run(t)
}

func TestBuildingThePipelineTakesNoPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		src := &rxtest.Probe{Items: []any{1}}
		obs := observable.Bulkhead(b, src.Observable()).Map(func(_ context.Context, v any) (any, error) { return v, nil })
		synctest.Wait()
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
		assert.Empty(t, ev.Types())
		assert.Zero(t, src.Observed.Load())

		assert.Equal(t, []any{1}, rxtest.Values(rxtest.Drain(obs.Observe())))
		assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Finished}, ev.Types())
	})
}

func TestAnErrorItemIsForwardedAndTheConsumerDecidesWhetherItEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		boom := errors.New("boom")
		src := &rxtest.Probe{Items: []any{1, boom, 2}}
		wrapped := observable.Bulkhead(b, src.Observable())

		got := rxtest.Drain(wrapped.OnErrorReturnItem("x").Observe())
		assert.Equal(t, []any{1, "x", 2}, rxtest.Values(got), "OnErrorReturnItem goes on after the error")

		id := func(_ context.Context, v any) (any, error) { return v, nil }
		seen, err := wrapped.Map(id).ToSlice(0, rxgo.WithErrorStrategy(rxgo.ContinueOnError))
		assert.Equal(t, []any{1, 2}, seen, "ContinueOnError reaches every item")
		assert.ErrorIs(t, err, boom)

		items := rxtest.Drain(wrapped.Observe())
		require.Len(t, items, 3)
		assert.ErrorIs(t, items[1].E, boom)
		assert.Equal(t, 2, items[2].V)
		assert.Equal(t, 0, b.Metrics().InFlightCalls, "the permit is back at the source's end")
		assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Finished, rxtest.Permitted, rxtest.Finished, rxtest.Permitted, rxtest.Finished}, ev.Types())
	})
}

func TestContextOfADownstreamOperatorReachesThePendingSubscription(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		ctx, cancel := context.WithCancel(t.Context())
		id := func(_ context.Context, v any) (any, error) { return v, nil }
		ch := observable.Bulkhead(b, rxgo.Just(1)()).Map(id, rxgo.WithContext(ctx)).Observe()
		synctest.Wait()
		require.Equal(t, 1, b.Metrics().QueuedCalls)
		cancel()
		assert.Empty(t, rxtest.Drain(ch))
		synctest.Wait()
		assert.Equal(t, 0, b.Metrics().QueuedCalls)
		b.ReleasePermission()
		assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Cancelled}, ev.Types())
	})
}

func TestContextGivenToTheOperatorEndsItsSubscriptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, time.Hour)
		ctx, cancel := context.WithCancel(t.Context())
		obs := observable.Bulkhead(b, (&rxtest.Probe{Hold: true}).Observable(), rxgo.WithContext(ctx))
		running := obs.Observe()
		waiting := obs.Observe()
		synctest.Wait()
		require.Equal(t, 1, b.Metrics().InFlightCalls)
		require.Equal(t, 1, b.Metrics().QueuedCalls)
		cancel()
		assert.Empty(t, rxtest.Drain(running))
		assert.Empty(t, rxtest.Drain(waiting))
		// The waiting one is withdrawn (cancelled), or granted by the
		// running one's release just before its own cancel and then given
		// back unused (permitted). Neither ran: no finished event.
		got := ev.Types()
		require.Len(t, got, 2)
		assert.Equal(t, rxtest.Permitted, got[0])
		assert.Contains(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Cancelled}, got[1])
	})
}

func TestTakeWithACancelledContextReleasesExactlyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		ctx, cancel := context.WithCancel(t.Context())
		// Take stops reading after two items but tells nobody upstream; the
		// documented remedy is a context cancelled once done.
		obs := observable.Bulkhead(b, rxgo.Range(0, 100)).Take(2, rxgo.WithContext(ctx))
		assert.Equal(t, []any{0, 1}, rxtest.Values(rxtest.Drain(obs.Observe())))
		synctest.Wait()
		assert.Equal(t, 1, b.Metrics().InFlightCalls, "the subscription is blocked on the item Take did not read")
		cancel()
		synctest.Wait()
		assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Finished}, ev.Types())
	})
}

func TestFlatMapOfBulkheadedInnerObservablesReleasesEachPermitOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 2, 0)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		obs := rxgo.Just(1, 2, 3)().FlatMap(func(it rxgo.Item) rxgo.Observable {
			return observable.Bulkhead(b, rxgo.Just(it.V, it.V)())
		}, rxgo.WithContext(ctx))
		assert.Equal(t, []any{1, 1, 2, 2, 3, 3}, rxtest.Values(rxtest.Drain(obs.Observe())))
		assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Finished, rxtest.Permitted, rxtest.Finished, rxtest.Permitted, rxtest.Finished}, ev.Types())
	})
}

func TestEachObserveAcquiresItsOwnPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 2, 0)
		src := &rxtest.Probe{Items: []any{1}, Hold: true}
		ctx, cancel := context.WithCancel(t.Context())
		obs := observable.Bulkhead(b, src.Observable())
		ch1 := obs.Observe(rxgo.WithContext(ctx))
		ch2 := obs.Observe(rxgo.WithContext(ctx))
		assert.Equal(t, 1, (<-ch1).V)
		assert.Equal(t, 1, (<-ch2).V)
		assert.Equal(t, 2, b.Metrics().InFlightCalls)
		assert.Equal(t, int32(2), src.Observed.Load())
		cancel()
		rxtest.Drain(ch1)
		rxtest.Drain(ch2)
		assert.ElementsMatch(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Permitted, rxtest.Finished, rxtest.Finished}, ev.Types())
	})
}

func TestBufferedChannelOptionPassesThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		ch := observable.Bulkhead(b, rxgo.Just(1, 2, 3)()).Observe(rxgo.WithBufferedChannel(3))
		assert.Equal(t, 3, cap(ch))
		synctest.Wait()
		assert.Len(t, ch, 3, "the source ran into the buffer without a reader")
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
		assert.Equal(t, []any{1, 2, 3}, rxtest.Values(rxtest.Drain(ch)))

		ch = observable.Bulkhead(b, rxgo.Just(1)(), rxgo.WithBufferedChannel(2)).Observe()
		assert.Equal(t, 2, cap(ch), "option given to Bulkhead")
		rxtest.Drain(ch)
	})
}

func TestTransformerAppliesOneBulkheadToManyPipelines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, time.Hour)
		walmart := observable.Transformer(b)
		a := walmart(rxgo.Just("a")())
		c := walmart(rxgo.Just("c")())
		assert.Equal(t, []any{"a"}, rxtest.Values(rxtest.Drain(a.Observe())))
		assert.Equal(t, []any{"c"}, rxtest.Values(rxtest.Drain(c.Observe())))
		assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Finished, rxtest.Permitted, rxtest.Finished}, ev.Types())
	})
}

func TestNilArgumentsPanicNamingTheRule(t *testing.T) {
	b, _ := rxtest.Partner(t, 1, 0)
	assert.PanicsWithValue(t, "observable: Bulkhead called with a nil bulkhead.Bulkhead", func() { observable.Bulkhead(nil, rxgo.Empty()) })
	assert.PanicsWithValue(t, "observable: Bulkhead called with a nil source rxgo.Observable", func() { observable.Bulkhead(b, nil) })
	assert.PanicsWithValue(t, "observable: Transformer called with a nil bulkhead.Bulkhead", func() { observable.Transformer(nil) })
	// a nil *Semaphore in the interface is nil too: refused where it is
	// passed, not at the first subscription
	var none *bulkhead.Semaphore
	assert.PanicsWithValue(t, "observable: Bulkhead called with a nil bulkhead.Bulkhead", func() { observable.Bulkhead(none, rxgo.Empty()) })
	assert.PanicsWithValue(t, "observable: Transformer called with a nil bulkhead.Bulkhead", func() { observable.Transformer(none) })
}
