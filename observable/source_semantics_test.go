package observable_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/reactivex/rxgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
	"github.com/rxbulkhead/bulkhead/observable"
)

// Regression tests of issue 28: with ample permits, a wrapped Observable
// behaves as its source (the differential suite, bench/rxdiff, runs every
// rxgo operator; these pin the four ways it did not).

var inc = func(_ context.Context, v any) (any, error) { return v.(int) + 1, nil }

// published returns a Connectable over a channel holding items, closed.
func published(items ...int) rxgo.Observable {
	ch := make(chan rxgo.Item, len(items))
	for _, v := range items {
		ch <- rxgo.Of(v)
	}
	close(ch)
	return rxgo.FromChannel(ch, rxgo.WithPublishStrategy())
}

func TestConnectOnTheWrappedObservableConnectsTheSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 2, 0)
		wrapped := observable.Bulkhead(b, published(1, 2))
		first, second := wrapped.Observe(), wrapped.Observe()
		synctest.Wait()
		select {
		case it := <-first:
			t.Fatalf("item %v before Connect", it)
		default:
		}
		wrapped.Connect(t.Context())
		got := make(chan []any)
		go func() { got <- rxtest.Values(rxtest.Drain(second)) }()
		assert.Equal(t, []any{1, 2}, rxtest.Values(rxtest.Drain(first)))
		assert.Equal(t, []any{1, 2}, <-got)
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
		assert.Equal(t, 2, ev.Count(rxtest.Finished))
	})
}

func TestTheSourcesBufferedChannelIsTheOneObserveReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		ch := observable.Bulkhead(b, rxgo.Just(1, 2, 3)(rxgo.WithBufferedChannel(5))).Observe()
		assert.Equal(t, 5, cap(ch))
		synctest.Wait()
		assert.Equal(t, 3, len(ch), "the source filled the buffer without a reader")
		assert.Equal(t, []any{1, 2, 3}, rxtest.Values(rxtest.Drain(ch)))
	})
}

func TestCancellingTheContextTheSourceWasBuiltWithEndsTheObservationAndReturnsThePermit(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  func(ctx context.Context) rxgo.Observable
	}{
		{"Defer", func(ctx context.Context) rxgo.Observable {
			return rxgo.Defer([]rxgo.Producer{func(ctx context.Context, _ chan<- rxgo.Item) { <-ctx.Done() }}, rxgo.WithContext(ctx))
		}},
		{"Create", func(ctx context.Context) rxgo.Observable {
			return rxgo.Create([]rxgo.Producer{func(ctx context.Context, _ chan<- rxgo.Item) { <-ctx.Done() }}, rxgo.WithContext(ctx))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, ev := rxtest.Partner(t, 1, 0)
				ctx, cancel := context.WithCancel(t.Context())
				ch := observable.Bulkhead(b, tc.src(ctx)).Observe()
				synctest.Wait()
				require.Equal(t, 1, b.Metrics().InFlightCalls)
				cancel()
				assert.Empty(t, rxtest.Drain(ch))
				assert.Equal(t, 0, b.Metrics().InFlightCalls)
				assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Finished}, ev.Types())
			})
		})
	}
}

func TestTheConsumersErrorStrategyReachesASourceChain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		boom := errors.New("boom")
		src := rxgo.Just(1, boom, 2)().Map(func(_ context.Context, v any) (any, error) { return v, nil })
		items := rxtest.Drain(observable.Bulkhead(b, src).Map(inc, rxgo.WithErrorStrategy(rxgo.ContinueOnError)).Observe())
		require.Len(t, items, 3, "the source's Map continues after the error as the consumer asks")
		assert.Equal(t, 2, items[0].V)
		assert.ErrorIs(t, items[1].E, boom)
		assert.Equal(t, 3, items[2].V)
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
	})
}

func TestConnectThroughAChainedOperatorKeepsTheSharedEmissionRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 4, 0)
		src := rxgo.Create([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
			for _, v := range []int{1, 2, 3} {
				rxgo.Of(v).SendContext(ctx, next)
			}
		}}, rxgo.WithPublishStrategy(), rxgo.WithContext(t.Context()))
		mapped := observable.Bulkhead(b, src).Map(inc, rxgo.WithPublishStrategy())
		ch := mapped.Observe()
		synctest.Wait()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		mapped.Connect(ctx)
		assert.Equal(t, []any{2, 3, 4}, rxtest.Values(rxtest.Drain(ch)), "the connect request's context is the emission's: it is not cancelled when the request's observation ends")
		synctest.Wait()
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
	})
}

func TestConnectOnAnOperatorChainedAfterTheWrapperReachesTheSourceWithoutAPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		mapped := observable.Bulkhead(b, published(1, 2)).Map(inc, rxgo.WithPublishStrategy())
		ch := mapped.Observe()
		synctest.Wait()
		require.Equal(t, 1, b.Metrics().InFlightCalls, "the subscriber holds the only permit")
		ctx, cancel := context.WithCancel(t.Context())
		mapped.Connect(ctx) // a full bulkhead does not reject it: it is no call
		assert.Equal(t, []any{2, 3}, rxtest.Values(rxtest.Drain(ch)))
		cancel() // ends the goroutine Map's Connect left waiting, as without the bulkhead
		synctest.Wait()
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
		assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Finished}, ev.Types(), "the subscriber's call only")
	})
}

func TestAConnectThatReachesASourceThatIsNotConnectableAsksForAPermitForTheRunItStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		ctx, cancel := context.WithCancel(t.Context())
		mapped := observable.Bulkhead(b, rxgo.Just(1, 2)()).Map(inc, rxgo.WithPublishStrategy(), rxgo.WithContext(ctx))
		ch := mapped.Observe()
		synctest.Wait()
		mapped.Connect(ctx) // Just ignores the request and starts a run, as without the bulkhead
		synctest.Wait()
		assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Rejected}, ev.Types(), "the run the Connect started asked for a permit; the subscriber holds the only one")
		cancel()
		rxtest.Drain(ch)
		synctest.Wait()
	})
}

func TestOperatorsChainedAfterTheWrapperSeeTheContextFromChannelWasBuiltWith(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		ctx, cancel := context.WithCancel(t.Context())
		in := make(chan rxgo.Item)
		seen := make(chan context.Context, 1)
		ch := observable.Bulkhead(b, rxgo.FromChannel(in, rxgo.WithContext(ctx))).
			Map(func(c context.Context, v any) (any, error) { seen <- c; return v, nil }).
			Observe()
		in <- rxgo.Of(1)
		assert.Equal(t, 1, (<-ch).V)
		mapCtx := <-seen
		cancel()
		synctest.Wait()
		assert.Error(t, mapCtx.Err(), "Map merges FromChannel's context with its own, as without the bulkhead")
		close(in)
		rxtest.Drain(ch)
		synctest.Wait() // the source's end gives the permit back
	})
}

// panicking is a source whose Observe panics.
type panicking struct{ rxgo.Observable }

func (panicking) Observe(...rxgo.Option) <-chan rxgo.Item { panic("source: Observe failed") }

func TestASourceWhoseObservePanicsGivesThePermitBackBeforeThePanicGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		wrapped := observable.Bulkhead(b, panicking{rxgo.Empty()})
		var ch <-chan rxgo.Item
		assert.PanicsWithValue(t, "source: Observe failed", func() { ch = wrapped.Observe() })
		assert.Nil(t, ch)
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
		assert.Equal(t, []bulkhead.EventType{rxtest.Permitted}, ev.Types(), "ReleasePermission: the call did not run, no CallFinished")
		// A chained operator observes its source on the caller's goroutine
		// too (as it would observe the bare source): the same holds.
		assert.PanicsWithValue(t, "source: Observe failed", func() { wrapped.Map(inc).Observe() })
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
	})
}
