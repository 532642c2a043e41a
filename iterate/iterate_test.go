package iterate_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/iterate"
	"github.com/rxbulkhead/bulkhead/testkit"
)

const (
	permitted = bulkhead.CallPermitted
	rejected  = bulkhead.CallRejected
	finished  = bulkhead.CallFinished
	cancelled = bulkhead.CallCancelled
)

func partner(t testing.TB, permits int, wait time.Duration) (*bulkhead.Semaphore, *testkit.EventLog) {
	t.Helper()
	b, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: permits, MaxWaitDuration: wait, MaxQueuedCalls: bulkhead.Unbounded})
	require.NoError(t, err)
	testkit.CheckPermits(t, b)
	return b, testkit.RecordEvents(t, b)
}

// counted is a source of vs that counts how often it is ranged over and
// checks that the permit is held while it runs.
type counted struct {
	b      *bulkhead.Semaphore
	ranged atomic.Int32
}

func (c *counted) seq(vs ...int) iter.Seq[int] {
	return func(yield func(int) bool) {
		c.ranged.Add(1)
		if c.b.Metrics().InFlightCalls == 0 {
			panic("the source runs without a permit")
		}
		for _, v := range vs {
			if !yield(v) {
				return
			}
		}
	}
}

// collect ranges over it and returns the values and the errors it yielded.
func collect[T any](it iter.Seq2[T, error]) (vs []T, errs []error) {
	for v, err := range it {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		vs = append(vs, v)
	}
	return vs, errs
}

func TestEachRangeTakesAPermitAndFinishesItWhenTheSourceEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := partner(t, 1, 0)
		src := &counted{b: b}
		it := iterate.Seq(t.Context(), b, src.seq(1, 2, 3))
		assert.Empty(t, ev.Types(), "building the iterator took a permit")
		for range 2 {
			vs, errs := collect(it)
			assert.Equal(t, []int{1, 2, 3}, vs)
			assert.Empty(t, errs)
			assert.Equal(t, 0, b.Metrics().InFlightCalls, "the permit is back when the loop statement completes")
		}
		assert.Equal(t, int32(2), src.ranged.Load())
		assert.Equal(t, []bulkhead.EventType{permitted, finished, permitted, finished}, ev.Types())
	})
}

func TestAnEmptySourceFinishesThePermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := partner(t, 1, 0)
		vs, errs := collect(iterate.Seq(t.Context(), b, (&counted{b: b}).seq()))
		assert.Empty(t, vs)
		assert.Empty(t, errs)
		assert.Equal(t, []bulkhead.EventType{permitted, finished}, ev.Types())
	})
}

func TestBreakingOutOfTheLoopFinishesThePermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := partner(t, 1, 0)
		var got []int
		for v, err := range iterate.Seq(t.Context(), b, (&counted{b: b}).seq(1, 2, 3)) {
			require.NoError(t, err)
			got = append(got, v)
			break
		}
		assert.Equal(t, []int{1}, got)
		assert.Equal(t, []bulkhead.EventType{permitted, finished}, ev.Types())
	})
}

func TestAPanicInTheLoopBodyFinishesThePermitAndGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := partner(t, 1, 0)
		assert.PanicsWithValue(t, "body", func() {
			for range iterate.Seq(t.Context(), b, (&counted{b: b}).seq(1, 2)) {
				panic("body")
			}
		})
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
		assert.Equal(t, []bulkhead.EventType{permitted, finished}, ev.Types(), "the body received a value: FinishCall")
	})
}

func TestAPanicInTheSourceBeforeAnyValueReleasesThePermitUnused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := partner(t, 1, 0)
		failing := func(func(int) bool) { panic("source") }
		assert.PanicsWithValue(t, "source", func() {
			for range iterate.Seq(t.Context(), b, failing) {
				t.Fatal("the body ran")
			}
		})
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
		assert.Equal(t, []bulkhead.EventType{permitted}, ev.Types(), "ReleasePermission publishes no CallFinished")
	})
}

func TestARejectedCallYieldsTheFullErrorOnceAndNeverRangesTheSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := partner(t, 1, 0)
		require.True(t, b.TryAcquirePermission())
		defer b.ReleasePermission()
		src := &counted{b: b}
		pairs := 0
		for v, err := range iterate.Seq(t.Context(), b, src.seq(1)) {
			pairs++
			assert.Zero(t, v)
			var full *bulkhead.FullError
			require.ErrorAs(t, err, &full)
			assert.ErrorIs(t, err, bulkhead.ErrBulkheadFull)
			assert.Equal(t, "partner", full.Name)
		}
		assert.Equal(t, 1, pairs)
		assert.Zero(t, src.ranged.Load())
		assert.Equal(t, []bulkhead.EventType{permitted, rejected}, ev.Types())
	})
}

func TestRangingWaitsForAPermitInFIFOOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		var (
			mu    sync.Mutex
			order []int
			wg    sync.WaitGroup
		)
		for i := range 3 {
			wg.Go(func() {
				for v, err := range iterate.Seq(t.Context(), b, slices.Values([]int{i})) {
					require.NoError(t, err)
					mu.Lock()
					order = append(order, v)
					mu.Unlock()
				}
			})
			synctest.Wait() // queue them in index order
		}
		assert.Equal(t, 3, b.Metrics().QueuedCalls)
		assert.Empty(t, order)
		b.ReleasePermission()
		wg.Wait()
		assert.Equal(t, []int{0, 1, 2}, order)
	})
}

func TestAContextEndingWhileWaitingWithdrawsAndYieldsItsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		src := &counted{b: b}
		start := time.Now()
		vs, errs := collect(iterate.Seq(ctx, b, src.seq(1)))
		assert.Empty(t, vs)
		require.Len(t, errs, 1)
		assert.ErrorIs(t, errs[0], context.DeadlineExceeded)
		assert.Equal(t, time.Minute, time.Since(start))
		assert.Equal(t, 0, b.Metrics().QueuedCalls)
		b.ReleasePermission()
		assert.Zero(t, src.ranged.Load())
		assert.Equal(t, []bulkhead.EventType{permitted, cancelled}, ev.Types())
	})
}

func TestAContextEndedBeforeRangingAsksForNoPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := partner(t, 1, 0)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, errs := collect(iterate.Seq(ctx, b, (&counted{b: b}).seq(1)))
		require.Len(t, errs, 1)
		assert.ErrorIs(t, errs[0], context.Canceled)
		assert.Empty(t, ev.Types())
	})
}

func TestSeq2PassesTheSourcesErrorsOnAndYieldsTheAcquireErrorFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := partner(t, 1, 0)
		boom := errors.New("page 2 failed")
		pages := func(yield func(string, error) bool) {
			if yield("page 1", nil) {
				yield("", boom)
			}
		}
		vs, errs := collect(iterate.Seq2(t.Context(), b, pages))
		assert.Equal(t, []string{"page 1"}, vs)
		assert.Equal(t, []error{boom}, errs)
		assert.Equal(t, []bulkhead.EventType{permitted, finished}, ev.Types(), "a source's error pair: the call ran")

		require.True(t, b.TryAcquirePermission())
		vs, errs = collect(iterate.Seq2(t.Context(), b, pages))
		b.ReleasePermission()
		assert.Empty(t, vs)
		require.Len(t, errs, 1)
		assert.ErrorIs(t, errs[0], bulkhead.ErrBulkheadFull)
	})
}

func TestNilArgumentsPanicWithAMessageNamingThem(t *testing.T) {
	b, _ := partner(t, 1, 0)
	seq := slices.Values([]int{1})
	seq2 := func(func(int, error) bool) {}
	ctx := context.Background()
	var noCtx context.Context // nil: the bad input under test
	assert.PanicsWithValue(t, "iterate: Seq called with a nil context.Context (use context.Background())", func() { iterate.Seq(noCtx, b, seq) })
	assert.PanicsWithValue(t, "iterate: Seq called with a nil bulkhead.Bulkhead", func() { iterate.Seq(ctx, nil, seq) })
	assert.PanicsWithValue(t, "iterate: Seq called with a nil source iterator", func() { iterate.Seq[int](ctx, b, nil) })
	assert.PanicsWithValue(t, "iterate: Seq2 called with a nil bulkhead.Bulkhead", func() { iterate.Seq2(ctx, nil, seq2) })
	assert.PanicsWithValue(t, "iterate: Seq2 called with a nil source iterator", func() { iterate.Seq2[int](ctx, b, nil) })
	var none *bulkhead.Semaphore // a nil pointer in the interface is nil too
	assert.PanicsWithValue(t, "iterate: Seq called with a nil bulkhead.Bulkhead", func() { iterate.Seq(ctx, none, seq) })
}

// TestGrantRacingCancelNeverLeaksAPermit hammers the race between a grant
// and the context ending, on real goroutines: whichever wins, the permit
// comes back exactly once (a second release panics in the Semaphore) and
// nothing stays queued.
func TestGrantRacingCancelNeverLeaksAPermit(t *testing.T) {
	b, _ := partner(t, 1, time.Hour)
	for i := range 3000 {
		require.True(t, b.TryAcquirePermission(), "iteration %d: the permit is still held", i)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan []error)
		go func() {
			_, errs := collect(iterate.Seq(ctx, b, slices.Values([]int{1})))
			done <- errs
		}()
		var wg sync.WaitGroup
		wg.Go(b.ReleasePermission)
		wg.Go(cancel)
		errs := <-done
		wg.Wait()
		for _, err := range errs {
			require.ErrorIs(t, err, context.Canceled, "iteration %d", i)
		}
		m := b.Metrics()
		require.Zero(t, m.InFlightCalls+m.QueuedCalls, "iteration %d: %+v", i, m)
	}
}
