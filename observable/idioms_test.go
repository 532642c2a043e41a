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

	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
	"github.com/rxbulkhead/bulkhead/maybe"
	"github.com/rxbulkhead/bulkhead/observable"
)

var errBoom = errors.New("boom")

// One test per row of the guide's table of rxgo idioms ("The consumer's
// contract"): what each idiom does to the permit.

func TestIdiomReadToTheEndGivesThePermitBackAtTheSourcesEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		assert.Equal(t, []any{1, 2}, rxtest.Values(rxtest.Drain(observable.Bulkhead(b, rxgo.Just(1, 2)()).Observe())))
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
	})
}

func TestIdiomContextOnTheOperatorReleasesWhatTakeAbandons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		ctx, cancel := context.WithCancel(t.Context())
		got := rxtest.Drain(observable.Bulkhead(b, rxgo.Range(0, 100)).Take(2, rxgo.WithContext(ctx)).Observe())
		assert.Equal(t, []any{0, 1}, rxtest.Values(got))
		synctest.Wait()
		require.Equal(t, 1, b.Metrics().InFlightCalls, "Take stopped reading: the bulkhead's stage waits on its send")
		cancel()
		synctest.Wait()
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
	})
}

func TestIdiomContextOnObserveReachesTheBulkheadThroughTheOperators(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		ctx, cancel := context.WithCancel(t.Context())
		first, err := observable.Bulkhead(b, rxgo.Range(0, 100)).First().Get(rxgo.WithContext(ctx))
		require.NoError(t, err)
		assert.Equal(t, 0, first.V)
		cancel()
		synctest.Wait()
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
	})
}

func TestIdiomContextOnBulkheadReleasesWhereTheOperatorDoesNotPropagateIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 2, 0)
		ctx, cancel := context.WithCancel(t.Context())
		at := func(v any) time.Time { return time.Unix(int64(v.(int)), 0) }
		pair := func(_ context.Context, l, r any) (any, error) { return [2]any{l, r}, nil }
		// Join observes its sources without the consumer's options: a
		// context given to Observe does not reach the bulkhead; one given
		// to Bulkhead does. Join stops at the left source's error.
		left := observable.Bulkhead(b, rxgo.Just(1, errBoom, 3)(), rxgo.WithContext(ctx))
		right := observable.Bulkhead(b, rxgo.Just(1)(), rxgo.WithContext(ctx))
		got := rxtest.Drain(left.Join(pair, right, at, rxgo.WithDuration(time.Second)).Observe(rxgo.WithContext(t.Context())))
		require.NotEmpty(t, got)
		assert.ErrorIs(t, got[len(got)-1].E, errBoom)
		synctest.Wait()
		require.Equal(t, 1, b.Metrics().InFlightCalls, "Join stopped reading the left source")
		cancel()
		synctest.Wait()
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
	})
}

func TestIdiomContextOnTheSourceEndsAnObservationReadToTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		ctx, cancel := context.WithCancel(t.Context())
		src := rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
			rxgo.Of(1).SendContext(ctx, next)
			<-ctx.Done() // a call that runs until its context ends
		}}, rxgo.WithContext(ctx))
		ch := observable.Bulkhead(b, src).Map(inc).Observe()
		assert.Equal(t, 2, (<-ch).V)
		cancel()
		assert.Empty(t, rxtest.Drain(ch))
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
	})
}

func TestIdiomContextOnTheSourceDoesNotReleaseAConsumerThatStoppedReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		ctx, cancel := context.WithCancel(t.Context())
		ch := observable.Bulkhead(b, rxgo.Just(1, 2, 3)(rxgo.WithContext(ctx))).Observe()
		<-ch // and stops reading, as Take(1) would
		synctest.Wait()
		cancel() // the source ends...
		synctest.Wait()
		assert.Equal(t, 1, b.Metrics().InFlightCalls, "...but the bulkhead's stage still waits to hand item 2 over")
		rxtest.Drain(ch) // only reading (or a consumer's context) lets it go
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
	})
}

func TestIdiomNoContextAndAConsumerThatStopsReadingHoldsThePermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		ch := observable.Bulkhead(b, rxgo.Just(1, 2)()).Observe()
		<-ch
		synctest.Wait()
		assert.Equal(t, 1, b.Metrics().InFlightCalls, "held for as long as nobody reads")
		rxtest.Drain(ch) // this test's clean-up
	})
}

func TestIdiomContinueOnErrorReadsPastTheErrorAndTheSourcesEndReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		got := rxtest.Drain(observable.Bulkhead(b, rxgo.Just(1, errBoom, 2)()).
			Map(inc, rxgo.WithErrorStrategy(rxgo.ContinueOnError)).Observe())
		require.Len(t, got, 3)
		assert.Equal(t, 3, got[2].V)
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
	})
}

func TestIdiomStopOnErrorAtAnErrorFollowedByItemsNeedsAContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		ctx, cancel := context.WithCancel(t.Context())
		got := rxtest.Drain(observable.Bulkhead(b, rxgo.Just(1, errBoom, 2)()).Map(inc).Observe(rxgo.WithContext(ctx)))
		require.Len(t, got, 2, "Map stops at the error (StopOnError)")
		synctest.Wait()
		require.Equal(t, 1, b.Metrics().InFlightCalls, "item 2 waits for a reader that has gone")
		cancel()
		synctest.Wait()
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
	})
}

func TestIdiomMaybeGetWithAContextEndsALongerSourceAfterTheValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		src := &rxtest.Probe{Items: []any{1, 2, 3}, Hold: true}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		it, err := maybe.Bulkhead(b, src.Observable().First()).Get(rxgo.WithContext(ctx))
		require.NoError(t, err)
		assert.Equal(t, 1, it.V)
		synctest.Wait() // the source was cancelled after the value: nothing is left running
		assert.Equal(t, 0, b.Metrics().InFlightCalls, "the permit is back at the value")
	})
}
