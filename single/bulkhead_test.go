package single_test

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
	"github.com/rxbulkhead/bulkhead/single"
)

func TestEmitsTheValueAndReleasesBeforeTheConsumerReceivesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		src := &rxtest.Probe{Items: []any{7}}
		s := single.Bulkhead(b, src.Single())
		synctest.Wait()
		assert.Zero(t, src.Observed.Load(), "building observes nothing")
		assert.Empty(t, ev.List(), "building takes no permit")

		ch := s.Observe()
		synctest.Wait() // the value is waiting for its consumer
		assert.Equal(t, 0, b.Metrics().InFlightCalls, "released at the value")
		assert.Equal(t, []bulkhead.EventType{permitted, finished}, ev.List())
		items := rxtest.Drain(ch)
		require.Len(t, items, 1)
		assert.Equal(t, 7, items[0].V)
	})
}

func TestPropagatesTheSourceErrorAndReleasesWithOnComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		boom := errors.New("boom")
		items := rxtest.Drain(single.Bulkhead(b, (&rxtest.Probe{Items: []any{boom}}).Single()).Observe())
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
		items := rxtest.Drain(single.Bulkhead(b, src.Single()).Observe())
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
			src := rxtest.ColdSingle(rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
				order = append(order, i) // one permit: never concurrent
				rxgo.Of(i).SendContext(ctx, next)
			}}))
			chs[i] = single.Bulkhead(b, src).Observe()
			synctest.Wait()
		}
		assert.Equal(t, 3, b.Metrics().QueuedCalls)
		assert.Empty(t, order)

		b.ReleasePermission()
		for i, ch := range chs { // released at the value: draining in order is fine
			assert.Equal(t, i, (<-ch).V)
		}
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
		items := rxtest.Drain(single.Bulkhead(b, src.Single()).Observe())
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
		ch := single.Bulkhead(b, src.Single()).Observe(rxgo.WithContext(ctx))
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
		src := &rxtest.Probe{Hold: true} // a Single still computing its value
		ch := single.Bulkhead(b, src.Single()).Observe(rxgo.WithContext(ctx))
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
		ch := single.Bulkhead(b, (&rxtest.Probe{Items: []any{boom}}).Single()).Observe()
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
	s := single.Bulkhead(b, rxgo.JustItem(1))
	for i := range 3000 {
		require.True(t, b.TryAcquirePermission())
		ctx, cancel := context.WithCancel(t.Context())
		ch := s.Observe(rxgo.WithContext(ctx))
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
		// rxgo's own operator-made Singles (Count, ElementAt...) build their
		// channel once: observing one of them twice panics with "send on
		// closed channel". Ours builds one per observation.
		b, ev := rxtest.Partner(t, 1, 0)
		src := &rxtest.Probe{Items: []any{"v"}}
		s := single.Bulkhead(b, src.Single())
		for range 3 {
			items := rxtest.Drain(s.Observe())
			require.Len(t, items, 1)
			assert.Equal(t, "v", items[0].V)
		}
		assert.Equal(t, int32(3), src.Observed.Load())
		assert.Equal(t, []bulkhead.EventType{permitted, finished, permitted, finished, permitted, finished}, ev.List())
	})
}

func TestMapFilterGetAndRunObserveAfreshEachTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		double := func(_ context.Context, v any) (any, error) { return v.(int) * 2, nil }
		even := func(v any) bool { return v.(int)%2 == 0 }
		s := single.Bulkhead(b, rxgo.JustItem(3)).Map(double)
		for range 2 {
			it, err := s.Get()
			require.NoError(t, err)
			assert.Equal(t, 6, it.V)
		}
		kept := s.Filter(even)
		it, err := kept.Get()
		require.NoError(t, err)
		assert.Equal(t, 6, it.V)
		dropped := single.Bulkhead(b, rxgo.JustItem(3)).Filter(even)
		it, err = dropped.Get()
		require.NoError(t, err)
		assert.Equal(t, rxgo.OptionalSingleEmpty, it)
		it, err = dropped.Map(double).Get()
		require.NoError(t, err)
		assert.Equal(t, rxgo.OptionalSingleEmpty, it)
		<-s.Run()
		<-dropped.Run()
		assert.Len(t, ev.List(), 14, "seven observations, each permitted and finished")
	})
}

func TestGetReturnsTheContextErrorAndWithdrawsWhenTheContextEndsWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, err := single.Bulkhead(b, rxgo.JustItem(1)).Get(rxgo.WithContext(ctx))
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
		s := single.Bulkhead(b, rxgo.JustItem(1))
		ch := s.Observe(rxgo.WithBufferedChannel(1))
		assert.Equal(t, 1, cap(ch))
		synctest.Wait()
		assert.Len(t, ch, 1, "the value went into the buffer without a reader")
		rxtest.Drain(ch)
		ch = single.Bulkhead(b, rxgo.JustItem(1), rxgo.WithBufferedChannel(2)).Observe()
		assert.Equal(t, 2, cap(ch))
		rxtest.Drain(ch)
	})
}

func TestTransformerAndNilArguments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		walmart := single.Transformer(b)
		it, err := walmart(rxgo.JustItem("po")).Get()
		require.NoError(t, err)
		assert.Equal(t, "po", it.V)
		assert.PanicsWithValue(t, "single: Bulkhead called with a nil bulkhead.Bulkhead", func() { single.Bulkhead(nil, rxgo.JustItem(1)) })
		assert.PanicsWithValue(t, "single: Bulkhead called with a nil source rxgo.Single", func() { single.Bulkhead(b, nil) })
		assert.PanicsWithValue(t, "single: Transformer called with a nil bulkhead.Bulkhead", func() { single.Transformer(nil) })
	})
}
