package rxpermit_test

import (
	"context"
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

func TestObservableBehavesAsABulkheadOperator(t *testing.T) {
	rxtest.Suite{Apply: func(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) rxgo.Iterable {
		return rxpermit.Observable(b, src, opts...)
	}}.Run(t)
}

func TestSingleBehavesAsABulkheadOperator(t *testing.T) {
	rxtest.Suite{First: true, Apply: func(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) rxgo.Iterable {
		return rxpermit.Single(b, src, opts...)
	}}.Run(t)
}

func TestOptionalSingleBehavesAsABulkheadOperator(t *testing.T) {
	rxtest.Suite{First: true, Apply: func(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) rxgo.Iterable {
		return rxpermit.OptionalSingle(b, src, opts...)
	}}.Run(t)
}

// runIterable observes by Run: its channel closes when Run's does.
type runIterable struct {
	r interface {
		Run(...rxgo.Option) rxgo.Disposed
	}
}

func (r runIterable) Observe(opts ...rxgo.Option) <-chan rxgo.Item {
	d := r.r.Run(opts...)
	ch := make(chan rxgo.Item)
	go func() { <-d; close(ch) }()
	return ch
}

func TestRunDiscardsTheItemsAndGivesThePermitBackByTheSameRules(t *testing.T) {
	t.Run("the source's end completes the permit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, ev := rxtest.Partner(t, 1, 0)
			src := &rxtest.Probe{Items: []any{1, 2}}
			one := &rxtest.Probe{Items: []any{1}} // a Single's source
			<-rxpermit.Observable(b, src.Observable()).Run()
			<-rxpermit.Single(b, one.Observable()).Run()
			<-rxpermit.OptionalSingle(b, one.Observable()).Run()
			assert.Equal(t, int32(1), src.Observed.Load())
			assert.Equal(t, int32(2), one.Observed.Load())
			assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Finished, rxtest.Permitted, rxtest.Finished, rxtest.Permitted, rxtest.Finished}, ev.Types())
		})
	})
	t.Run("a rejected Run ends without observing the source", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, ev := rxtest.Partner(t, 1, 0)
			require.True(t, b.TryAcquirePermission())
			src := &rxtest.Probe{Items: []any{1}}
			<-rxpermit.Observable(b, src.Observable()).Run()
			b.ReleasePermission()
			assert.Zero(t, src.Observed.Load())
			assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Rejected}, ev.Types())
		})
	})
	t.Run("cancel while pending withdraws, cancel while running releases", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, ev := rxtest.Partner(t, 1, time.Hour)
			require.True(t, b.TryAcquirePermission())
			ctx, cancel := context.WithCancel(t.Context())
			pending := rxpermit.Observable(b, (&rxtest.Probe{Items: []any{1}}).Observable()).Run(rxgo.WithContext(ctx))
			synctest.Wait()
			require.Equal(t, 1, b.Metrics().QueuedCalls)
			cancel()
			<-pending
			b.ReleasePermission()

			ctx, cancel = context.WithCancel(t.Context())
			held := &rxtest.Probe{Hold: true}
			running := rxpermit.Observable(b, held.Observable()).Run(rxgo.WithContext(ctx))
			synctest.Wait()
			require.Equal(t, int32(1), held.Observed.Load())
			cancel()
			<-running
			assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Cancelled, rxtest.Permitted}, ev.Types())
		})
	})
}

func TestRunGrantRacingCancelNeverLeaksAPermit(t *testing.T) {
	b, _ := rxtest.Partner(t, 1, time.Hour)
	rxtest.GrantRacingCancel(t, b, runIterable{rxpermit.Observable(b, (&rxtest.Probe{Items: []any{1}}).Observable())}, nil, 2000)
}

// The operator's own options reach every observation: a context given to
// the operator withdraws a pending observation observed without options.
func TestTheOperatorsContextWithdrawsAPendingObservation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		ctx, cancel := context.WithCancel(t.Context())
		ch := rxpermit.Single(b, (&rxtest.Probe{Items: []any{1}}).Observable(), rxgo.WithContext(ctx)).Observe()
		synctest.Wait()
		require.Equal(t, 1, b.Metrics().QueuedCalls)
		cancel()
		assert.Empty(t, rxtest.Drain(ch))
		b.ReleasePermission()
		assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Cancelled}, ev.Types())
	})
}
