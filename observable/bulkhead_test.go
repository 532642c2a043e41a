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
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestBuildingThePipelineTakesNoPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		src := &rxtest.Probe{Items: []any{1}}
		obs := observable.Bulkhead(b, src.Observable()).Map(func(_ context.Context, v any) (any, error) { return v, nil })
		synctest.Wait()
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
		assert.Empty(t, ev.List())
		assert.Zero(t, src.Observed.Load())

		assert.Equal(t, []any{1}, rxtest.Values(rxtest.Drain(obs.Observe())))
		assert.Equal(t, []bulkhead.EventType{permitted, finished}, ev.List())
	})
}

func TestEmitsAllItemsAndReleasesWithOnComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		o := testkit.Observe(observable.Bulkhead(b, rxgo.Range(0, 5)))
		require.True(t, o.Await(time.Minute))
		o.AssertResult(t, 0, 1, 2, 3, 4)
		assert.Equal(t, []bulkhead.EventType{permitted, finished}, ev.List())
	})
}

func TestPropagatesSourceErrorAndReleasesBeforeItArrives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		boom := errors.New("boom")
		src := &rxtest.Probe{Items: []any{1, boom, 2}}
		ch := observable.Bulkhead(b, src.Observable()).Observe()
		assert.Equal(t, 1, (<-ch).V)
		it := <-ch
		require.ErrorIs(t, it.E, boom)
		// The error is terminal and the permit is back when it arrives.
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
		_, open := <-ch
		assert.False(t, open, "no item after the error")
		assert.Equal(t, []bulkhead.EventType{permitted, finished}, ev.List())
	})
}

func TestObserveReturnsAtOnceWhenFullAndQueuesUntilARelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		src := &rxtest.Probe{Items: []any{"a", "b"}}
		ch := observable.Bulkhead(b, src.Observable()).Observe() // must not block
		synctest.Wait()
		assert.Equal(t, 1, b.Metrics().QueuedCalls)
		assert.Zero(t, src.Observed.Load(), "source observed before the grant")
		select {
		case it := <-ch:
			t.Fatalf("item %v before the grant", it)
		default:
		}

		b.OnComplete()
		assert.Equal(t, []any{"a", "b"}, rxtest.Values(rxtest.Drain(ch)))
		assert.Equal(t, int32(1), src.Observed.Load())
		assert.Equal(t, []bulkhead.EventType{permitted, finished, permitted, finished}, ev.List())
	})
}

func TestRejectedEmitsOneFullErrorAndNeverObservesTheSource(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    bulkhead.Config
		reason bulkhead.Reason
	}{
		{"no wait", bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.NoWait},
		{"queue full", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1}, bulkhead.QueueFull},
		{"wait timeout", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second}, bulkhead.WaitTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, ev := rxtest.Partner(t, 1, 0)
				require.NoError(t, b.ChangeConfig(tc.cfg))
				require.True(t, b.TryAcquirePermission())
				var queued <-chan rxgo.Item
				if tc.reason == bulkhead.QueueFull {
					queued = observable.Bulkhead(b, rxgo.Just(0)()).Observe()
					synctest.Wait()
				}
				src := &rxtest.Probe{Items: []any{1}}
				start := time.Now()
				items := rxtest.Drain(observable.Bulkhead(b, src.Observable()).Observe())

				require.Len(t, items, 1)
				var full *bulkhead.FullError
				require.ErrorAs(t, items[0].E, &full)
				assert.ErrorIs(t, items[0].E, bulkhead.ErrBulkheadFull)
				assert.Equal(t, tc.reason, full.Reason)
				assert.Equal(t, "partner", full.Name)
				assert.Zero(t, src.Observed.Load(), "a rejected subscription observed its source")
				if tc.reason == bulkhead.WaitTimeout {
					assert.Equal(t, time.Second, time.Since(start), "expiry after MaxWaitDuration")
				}
				assert.NotContains(t, ev.List()[1:], finished, "a rejection never completes a permit")

				b.ReleasePermission()
				if queued != nil {
					assert.Equal(t, []any{0}, rxtest.Values(rxtest.Drain(queued)))
				}
			})
		})
	}
}

func TestQueuedSubscriptionsAreGrantedInFIFOOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		var order []int
		chs := make([]<-chan rxgo.Item, 4)
		for i := range chs {
			src := rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
				order = append(order, i) // one permit: sources never run concurrently
				rxgo.Of(i).SendContext(ctx, next)
			}})
			chs[i] = observable.Bulkhead(b, src).Observe()
			synctest.Wait() // queue them in index order
		}
		assert.Equal(t, 4, b.Metrics().QueuedCalls)

		b.ReleasePermission()
		got := make([][]any, len(chs))
		done := make(chan int)
		for i, ch := range chs {
			go func() { got[i] = rxtest.Values(rxtest.Drain(ch)); done <- i }()
		}
		for range chs {
			<-done
		}
		assert.Equal(t, []int{0, 1, 2, 3}, order)
		for i := range chs {
			assert.Equal(t, []any{i}, got[i])
		}
	})
}

func TestCancelWhilePendingWithdrawsWithoutConsumingAPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		ctx, cancel := context.WithCancel(t.Context())
		src := &rxtest.Probe{Items: []any{1}}
		ch := observable.Bulkhead(b, src.Observable()).Observe(rxgo.WithContext(ctx))
		synctest.Wait()
		require.Equal(t, 1, b.Metrics().QueuedCalls)

		cancel()
		assert.Empty(t, rxtest.Drain(ch))
		assert.Equal(t, 0, b.Metrics().QueuedCalls)
		assert.Equal(t, 1, b.Metrics().InFlightCalls, "only the test's own permit is held")
		b.ReleasePermission()
		synctest.Wait()
		assert.Equal(t, 0, b.Metrics().InFlightCalls, "the withdrawn subscription took the released permit")
		assert.Zero(t, src.Observed.Load())
		assert.Equal(t, []bulkhead.EventType{permitted, cancelled}, ev.List())
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
		assert.Equal(t, []bulkhead.EventType{permitted, cancelled}, ev.List())
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
		got := ev.List()
		require.Len(t, got, 2)
		assert.Equal(t, permitted, got[0])
		assert.Contains(t, []bulkhead.EventType{permitted, cancelled}, got[1])
	})
}

func TestCancelAfterAQueuedGrantReleasesThePermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		ctx, cancel := context.WithCancel(t.Context())
		src := &rxtest.Probe{Hold: true} // emits nothing, runs until cancelled
		ch := observable.Bulkhead(b, src.Observable()).Observe(rxgo.WithContext(ctx))
		synctest.Wait()
		b.ReleasePermission()
		synctest.Wait()
		require.Equal(t, int32(1), src.Observed.Load())
		require.Equal(t, 1, b.Metrics().InFlightCalls)

		cancel()
		assert.Empty(t, rxtest.Drain(ch))
		// No item was emitted: ReleasePermission, hence no CallFinished.
		assert.Equal(t, []bulkhead.EventType{permitted, permitted}, ev.List())
	})
}

func TestCancelAfterAnItemReleasesWithOnComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		src := &rxtest.Probe{Items: []any{1, 2}, Hold: true}
		o := testkit.Observe(observable.Bulkhead(b, src.Observable()))
		require.True(t, o.AwaitCount(2, time.Minute))
		o.Cancel()
		synctest.Wait()
		assert.Equal(t, []any{1, 2}, o.Values())
		assert.False(t, o.IsComplete())
		assert.Equal(t, []bulkhead.EventType{permitted, finished}, ev.List())
	})
}

func TestErrorAfterAQueuedGrantReleasesThePermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		boom := errors.New("boom")
		ch := observable.Bulkhead(b, rxgo.Thrown(boom)).Observe()
		synctest.Wait()
		b.ReleasePermission()
		items := rxtest.Drain(ch)
		require.Len(t, items, 1)
		assert.ErrorIs(t, items[0].E, boom)
		assert.Equal(t, []bulkhead.EventType{permitted, permitted, finished}, ev.List())
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
		assert.Equal(t, []bulkhead.EventType{permitted, finished}, ev.List())
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
		assert.Equal(t, []bulkhead.EventType{permitted, finished, permitted, finished, permitted, finished}, ev.List())
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
		assert.ElementsMatch(t, []bulkhead.EventType{permitted, permitted, finished, finished}, ev.List())
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
		assert.Equal(t, []bulkhead.EventType{permitted, finished, permitted, finished}, ev.List())
	})
}

func TestNilArgumentsPanicNamingTheRule(t *testing.T) {
	b, _ := rxtest.Partner(t, 1, 0)
	assert.PanicsWithValue(t, "observable: Bulkhead called with a nil bulkhead.Bulkhead", func() { observable.Bulkhead(nil, rxgo.Empty()) })
	assert.PanicsWithValue(t, "observable: Bulkhead called with a nil source rxgo.Observable", func() { observable.Bulkhead(b, nil) })
	assert.PanicsWithValue(t, "observable: Transformer called with a nil bulkhead.Bulkhead", func() { observable.Transformer(nil) })
}
