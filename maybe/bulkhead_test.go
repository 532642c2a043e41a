package maybe_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reactivex/rxgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
	"github.com/rxbulkhead/bulkhead/maybe"
)

func TestEmitsTheValueAndReleasesBeforeTheConsumerReceivesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		src := &rxtest.Probe{Items: []any{7}}
		m := maybe.Bulkhead(b, src.OptionalSingle())
		synctest.Wait()
		assert.Zero(t, src.Observed.Load(), "building observes nothing")
		assert.Empty(t, ev.List(), "building takes no permit")

		ch := m.Observe()
		synctest.Wait()
		assert.Equal(t, 0, b.Metrics().InFlightCalls, "released at the value")
		items := rxtest.Drain(ch)
		require.Len(t, items, 1)
		assert.Equal(t, 7, items[0].V)
		assert.Equal(t, []bulkhead.EventType{permitted, finished}, ev.List())
	})
}

func TestEmptyCompletionReleasesWithOnComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		m := maybe.Bulkhead(b, (&rxtest.Probe{}).OptionalSingle())
		assert.Empty(t, rxtest.Drain(m.Observe()))
		it, err := m.Get()
		require.NoError(t, err)
		assert.Equal(t, rxgo.OptionalSingleEmpty, it)
		assert.Equal(t, []bulkhead.EventType{permitted, finished, permitted, finished}, ev.List())
	})
}

func TestPropagatesTheSourceErrorAndReleasesWithOnComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		boom := errors.New("boom")
		items := rxtest.Drain(maybe.Bulkhead(b, (&rxtest.Probe{Items: []any{boom}}).OptionalSingle()).Observe())
		require.Len(t, items, 1)
		assert.ErrorIs(t, items[0].E, boom)
		assert.Equal(t, []bulkhead.EventType{permitted, finished}, ev.List())
	})
}

func TestFullEmitsOneFullErrorNeverObservesTheSourceNorCompletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		require.True(t, b.TryAcquirePermission())
		src := &rxtest.Probe{Items: []any{1}}
		items := rxtest.Drain(maybe.Bulkhead(b, src.OptionalSingle()).Observe())
		require.Len(t, items, 1)
		var full *bulkhead.FullError
		require.ErrorAs(t, items[0].E, &full)
		assert.Equal(t, bulkhead.NoWait, full.Reason)
		assert.Zero(t, src.Observed.Load())
		b.ReleasePermission()
		assert.Equal(t, []bulkhead.EventType{permitted, rejected}, ev.List())
	})
}

func TestQueuesUntilAPermitIsReleasedThenGrantsInFIFOOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		var order []int
		chs := make([]<-chan rxgo.Item, 3)
		for i := range chs {
			src := coldMaybe{rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
				order = append(order, i) // one permit: never concurrent
				if i != 1 {
					rxgo.Of(i).SendContext(ctx, next)
				}
			}})}
			chs[i] = maybe.Bulkhead(b, src).Observe()
			synctest.Wait()
		}
		assert.Equal(t, 3, b.Metrics().QueuedCalls)
		assert.Empty(t, order)

		b.ReleasePermission()
		assert.Equal(t, 0, (<-chs[0]).V)
		assert.Empty(t, rxtest.Drain(chs[1]), "the middle one completes empty")
		assert.Equal(t, 2, (<-chs[2]).V)
		assert.Equal(t, []int{0, 1, 2}, order)
	})
}

func TestQueuedObservationExpiresAfterTheMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 3*time.Second)
		require.True(t, b.TryAcquirePermission())
		defer b.ReleasePermission()
		src := &rxtest.Probe{Items: []any{1}}
		start := time.Now()
		items := rxtest.Drain(maybe.Bulkhead(b, src.OptionalSingle()).Observe())
		assert.Equal(t, 3*time.Second, time.Since(start))
		require.Len(t, items, 1)
		var full *bulkhead.FullError
		require.ErrorAs(t, items[0].E, &full)
		assert.Equal(t, bulkhead.WaitTimeout, full.Reason)
		assert.Zero(t, src.Observed.Load())
		assert.Equal(t, []bulkhead.EventType{permitted, rejected}, ev.List())
	})
}

func TestCancelWhileWaitingWithdrawsWithoutConsumingAPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		ctx, cancel := context.WithCancel(t.Context())
		src := &rxtest.Probe{Items: []any{1}}
		ch := maybe.Bulkhead(b, src.OptionalSingle()).Observe(rxgo.WithContext(ctx))
		synctest.Wait()
		cancel()
		assert.Empty(t, rxtest.Drain(ch))
		assert.Equal(t, 0, b.Metrics().QueuedCalls)
		b.ReleasePermission()
		synctest.Wait()
		assert.Zero(t, src.Observed.Load())
		assert.Equal(t, []bulkhead.EventType{permitted, cancelled}, ev.List())
	})
}

func TestCancelAfterTheGrantBeforeTheValueReleasesWithoutFinishing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		ctx, cancel := context.WithCancel(t.Context())
		src := &rxtest.Probe{Hold: true}
		ch := maybe.Bulkhead(b, src.OptionalSingle()).Observe(rxgo.WithContext(ctx))
		synctest.Wait()
		b.ReleasePermission()
		synctest.Wait()
		require.Equal(t, int32(1), src.Observed.Load())
		cancel()
		assert.Empty(t, rxtest.Drain(ch))
		assert.Equal(t, []bulkhead.EventType{permitted, permitted}, ev.List(), "ReleasePermission: no CallFinished")
	})
}

func TestErrorAfterAQueuedGrantReleasesThePermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		boom := errors.New("boom")
		ch := maybe.Bulkhead(b, (&rxtest.Probe{Items: []any{boom}}).OptionalSingle()).Observe()
		synctest.Wait()
		b.ReleasePermission()
		items := rxtest.Drain(ch)
		require.Len(t, items, 1)
		assert.ErrorIs(t, items[0].E, boom)
		assert.Equal(t, []bulkhead.EventType{permitted, permitted, finished}, ev.List())
	})
}

func TestGrantRacingCancelNeverLeaksAPermit(t *testing.T) {
	b, _ := rxtest.Partner(t, 1, time.Hour)
	m := maybe.Bulkhead(b, rxgo.Just(1)().First())
	for i := range 3000 {
		require.True(t, b.TryAcquirePermission())
		ctx, cancel := context.WithCancel(t.Context())
		ch := m.Observe(rxgo.WithContext(ctx))
		for j := 0; i%4 != 0 && j < 100 && b.Metrics().QueuedCalls == 0; j++ {
			runtime.Gosched()
		}
		var wg sync.WaitGroup
		wg.Go(b.ReleasePermission)
		wg.Go(cancel)
		rxtest.Drain(ch)
		wg.Wait()
		m := b.Metrics()
		require.Zero(t, m.InFlightCalls, "iteration %d", i)
		require.Zero(t, m.QueuedCalls, "iteration %d", i)
	}
}

func TestCanBeObservedMoreThanOnceEachWithItsOwnPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		src := &rxtest.Probe{Items: []any{"v"}}
		m := maybe.Bulkhead(b, src.OptionalSingle())
		for range 3 {
			it, err := m.Get()
			require.NoError(t, err)
			assert.Equal(t, "v", it.V)
		}
		<-m.Run()
		assert.Equal(t, int32(4), src.Observed.Load())
		assert.Len(t, ev.List(), 8, "four observations, each permitted and finished")
	})
}

func TestMapAppliesToTheValueAndKeepsEmptyEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		double := func(_ context.Context, v any) (any, error) { return v.(int) * 2, nil }
		it, err := maybe.Bulkhead(b, (&rxtest.Probe{Items: []any{4}}).OptionalSingle()).Map(double).Get()
		require.NoError(t, err)
		assert.Equal(t, 8, it.V)
		it, err = maybe.Bulkhead(b, (&rxtest.Probe{}).OptionalSingle()).Map(double).Get()
		require.NoError(t, err)
		assert.Equal(t, rxgo.OptionalSingleEmpty, it)
	})
}

func TestGetReturnsTheContextErrorAndWithdrawsWhenTheContextEndsWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, err := maybe.Bulkhead(b, (&rxtest.Probe{Items: []any{1}}).OptionalSingle()).Get(rxgo.WithContext(ctx))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		synctest.Wait()
		assert.Equal(t, 0, b.Metrics().QueuedCalls)
		b.ReleasePermission()
		assert.Equal(t, []bulkhead.EventType{permitted, cancelled}, ev.List())
	})
}

func TestOptionsPassThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		m := maybe.Bulkhead(b, (&rxtest.Probe{Items: []any{1}}).OptionalSingle())
		ch := m.Observe(rxgo.WithBufferedChannel(1))
		assert.Equal(t, 1, cap(ch))
		synctest.Wait()
		assert.Len(t, ch, 1, "the value went into the buffer without a reader")
		rxtest.Drain(ch)
		ch = maybe.Bulkhead(b, (&rxtest.Probe{Items: []any{1}}).OptionalSingle(), rxgo.WithBufferedChannel(2)).Observe()
		assert.Equal(t, 2, cap(ch))
		rxtest.Drain(ch)
	})
}

func TestTransformerAndNilArguments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		walmart := maybe.Transformer(b)
		it, err := walmart(rxgo.Just("po")().First()).Get()
		require.NoError(t, err)
		assert.Equal(t, "po", it.V)
		assert.PanicsWithValue(t, "maybe: Bulkhead called with a nil bulkhead.Bulkhead", func() { maybe.Bulkhead(nil, rxgo.Just(1)().First()) })
		assert.PanicsWithValue(t, "maybe: Bulkhead called with a nil source rxgo.OptionalSingle", func() { maybe.Bulkhead(b, nil) })
		assert.PanicsWithValue(t, "maybe: Transformer called with a nil bulkhead.Bulkhead", func() { maybe.Transformer(nil) })
	})
}
