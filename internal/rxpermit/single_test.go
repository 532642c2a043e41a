package rxpermit_test

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
	"github.com/rxbulkhead/bulkhead/internal/rxpermit"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
)

func TestSingleGetMapFilterAndRunEachObserveAfresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		src := &rxtest.Probe{Items: []any{3}}
		double := func(_ context.Context, v any) (any, error) { return v.(int) * 2, nil }
		even := func(v any) bool { return v.(int)%2 == 0 }
		s := rxpermit.Single(b, src.Observable()).Map(double)
		for range 2 {
			it, err := s.Get()
			require.NoError(t, err)
			assert.Equal(t, 6, it.V)
		}
		it, err := s.Filter(even).Get()
		require.NoError(t, err)
		assert.Equal(t, 6, it.V)
		it, err = s.Filter(func(any) bool { return false }).Map(double).Get()
		require.NoError(t, err)
		assert.Equal(t, rxgo.OptionalSingleEmpty, it, "a filtered-out Single is an empty OptionalSingle")
		<-s.Run()
		assert.Equal(t, int32(5), src.Observed.Load())
		assert.Len(t, ev.Types(), 10, "five observations, each permitted and finished")
	})
}

func TestOptionalSingleGetMapAndRunEachObserveAfresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		double := func(_ context.Context, v any) (any, error) { return v.(int) * 2, nil }
		full := &rxtest.Probe{Items: []any{4}}
		empty := &rxtest.Probe{}
		for range 2 {
			it, err := rxpermit.OptionalSingle(b, full.Observable()).Map(double).Get()
			require.NoError(t, err)
			assert.Equal(t, 8, it.V)
			it, err = rxpermit.OptionalSingle(b, empty.Observable()).Map(double).Get()
			require.NoError(t, err)
			assert.Equal(t, rxgo.OptionalSingleEmpty, it)
		}
		<-rxpermit.OptionalSingle(b, full.Observable()).Run()
		assert.Equal(t, int32(3), full.Observed.Load())
		assert.Equal(t, int32(2), empty.Observed.Load())
		assert.Len(t, ev.Types(), 10, "five observations, each permitted and finished")
	})
}

func TestGetReturnsAnErrorItemAsAnItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		boom := errors.New("boom")
		src := &rxtest.Probe{Items: []any{boom}}
		it, err := rxpermit.Single(b, src.Observable()).Get()
		require.NoError(t, err)
		assert.ErrorIs(t, it.E, boom)
		it, err = rxpermit.OptionalSingle(b, src.Observable()).Get()
		require.NoError(t, err)
		assert.ErrorIs(t, it.E, boom)
	})
}

func TestSingleGetOfAnEmptySourceReturnsTheZeroItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		it, err := rxpermit.Single(b, (&rxtest.Probe{}).Observable()).Get()
		require.NoError(t, err)
		assert.Equal(t, rxgo.Item{}, it)
	})
}

func TestGetReturnsTheContextErrorAndWithdrawsWhenTheContextEndsWhileWaiting(t *testing.T) {
	for _, tc := range []struct {
		name string
		get  func(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) (rxgo.Item, error)
	}{
		{"Single", func(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) (rxgo.Item, error) {
			return rxpermit.Single(b, src).Get(opts...)
		}},
		{"OptionalSingle", func(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) (rxgo.Item, error) {
			return rxpermit.OptionalSingle(b, src).Get(opts...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, ev := rxtest.Partner(t, 1, time.Hour)
				require.True(t, b.TryAcquirePermission())
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				src := &rxtest.Probe{Items: []any{1}}
				_, err := tc.get(b, src.Observable(), rxgo.WithContext(ctx))
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				synctest.Wait()
				assert.Equal(t, 0, b.Metrics().QueuedCalls)
				b.ReleasePermission()
				assert.Zero(t, src.Observed.Load())
				assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Cancelled}, ev.Types())
			})
		})
	}
}
