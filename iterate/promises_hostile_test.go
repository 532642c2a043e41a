package iterate_test

// The tests in this file try the promises of the package documentation the
// way a hostile caller would: a bulkhead that cannot block (so the iterator
// waits on the Acquisition itself), a context that ends inside the loop, a
// loop body that ranges the same iterator again while it holds the only
// permit, an iterator driven by iter.Pull2, and a source that ignores the
// end of the loop.

import (
	"context"
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
)

// asyncOnly hides the Semaphore's blocking AcquirePermission, so that the
// iterator takes the path of a bulkhead that is not a BlockingBulkhead: it
// waits on the Acquisition's Done channel and withdraws it itself.
type asyncOnly struct{ bulkhead.Bulkhead }

// Promise: ranging "blocks the ranging goroutine until the bulkhead grants
// it, rejects the call, or ctx ends (then the request is withdrawn)", for
// any bulkhead.Bulkhead, not only one that blocks by itself.
func TestHostileABulkheadThatCannotBlockIsWaitedForAndWithdrawn(t *testing.T) {
	t.Run("granted after a wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, ev := partner(t, 1, time.Hour)
			require.True(t, b.TryAcquirePermission())
			src := &counted{b: b}
			done := make(chan []int)
			go func() {
				vs, errs := collect(iterate.Seq(t.Context(), asyncOnly{b}, src.seq(1, 2)))
				assert.Empty(t, errs)
				done <- vs
			}()
			synctest.Wait()
			assert.Equal(t, 1, b.Metrics().QueuedCalls)
			b.ReleasePermission()
			assert.Equal(t, []int{1, 2}, <-done)
			assert.Equal(t, []bulkhead.EventType{permitted, permitted, finished}, ev.Types())
		})
	})
	t.Run("context ends while waiting", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, ev := partner(t, 1, time.Hour)
			require.True(t, b.TryAcquirePermission())
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			src := &counted{b: b}
			start := time.Now()
			vs, errs := collect(iterate.Seq(ctx, asyncOnly{b}, src.seq(1)))
			assert.Empty(t, vs)
			require.Len(t, errs, 1)
			assert.ErrorIs(t, errs[0], context.DeadlineExceeded)
			assert.Equal(t, time.Minute, time.Since(start))
			assert.Equal(t, 0, b.Metrics().QueuedCalls)
			b.ReleasePermission()
			assert.Zero(t, src.ranged.Load())
			assert.Equal(t, []bulkhead.EventType{permitted, cancelled}, ev.Types())
		})
	})
	t.Run("rejected at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, ev := partner(t, 1, 0)
			require.True(t, b.TryAcquirePermission())
			defer b.ReleasePermission()
			_, errs := collect(iterate.Seq2(t.Context(), asyncOnly{b}, func(func(int, error) bool) { t.Error("source ranged") }))
			require.Len(t, errs, 1)
			assert.ErrorIs(t, errs[0], bulkhead.ErrBulkheadFull)
			assert.Equal(t, []bulkhead.EventType{permitted, rejected}, ev.Types())
		})
	})
}

// Promise: "ctx bounds the wait only: once the permit is held, the loop runs
// to its end whatever ctx does". A context cancelled by the loop body after
// the first value must not cut the loop short nor give the permit back
// before the loop ends.
func TestHostileAContextEndingInsideTheLoopDoesNotEndIt(t *testing.T) {
	for name, b := range map[string]func(*bulkhead.Semaphore) bulkhead.Bulkhead{
		"Semaphore":  func(s *bulkhead.Semaphore) bulkhead.Bulkhead { return s },
		"async only": func(s *bulkhead.Semaphore) bulkhead.Bulkhead { return asyncOnly{s} },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, ev := partner(t, 1, 0)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				var got []int
				for v, err := range iterate.Seq(ctx, b(s), (&counted{b: s}).seq(1, 2, 3)) {
					require.NoError(t, err)
					got = append(got, v)
					cancel()
					assert.Equal(t, 1, s.Metrics().InFlightCalls, "the permit went back while the loop ran")
				}
				assert.Equal(t, []int{1, 2, 3}, got)
				assert.Equal(t, []bulkhead.EventType{permitted, finished}, ev.Types())
			})
		})
	}
}

// Promise: "each range takes its own permit", and a call that gets no
// permit yields one error pair. A loop body that ranges the same iterator
// again while its own loop holds the only permit therefore waits for
// itself: without a queue the inner range is rejected at once; with a queue
// it waits until ctx or MaxWaitDuration ends the wait (never a deadlock)
// and leaves the queue. The outer loop is unaffected either way.
func TestHostileRangingTheSameIteratorInsideItsOwnLoop(t *testing.T) {
	cases := []struct {
		name    string
		wait    time.Duration
		ctxWait time.Duration
		wantErr error
	}{
		{"no queue", 0, 0, bulkhead.ErrBulkheadFull},
		{"queue, ctx ends the wait", time.Hour, time.Second, context.DeadlineExceeded},
		{"queue, MaxWaitDuration ends the wait", time.Second, 0, bulkhead.ErrBulkheadFull},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, ev := partner(t, 1, tc.wait)
				ctx := t.Context()
				if tc.ctxWait > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.ctxWait)
					defer cancel()
				}
				it := iterate.Seq(ctx, b, (&counted{b: b}).seq(1, 2))
				var outer []int
				var inner [][]error
				for v, err := range it {
					require.NoError(t, err)
					outer = append(outer, v)
					if v == 1 {
						vs, errs := collect(it)
						assert.Empty(t, vs)
						inner = append(inner, errs)
						assert.Equal(t, 0, b.Metrics().QueuedCalls, "the inner range stayed queued")
					}
				}
				assert.Equal(t, []int{1, 2}, outer)
				require.Len(t, inner, 1)
				require.Len(t, inner[0], 1)
				assert.ErrorIs(t, inner[0][0], tc.wantErr)
				assert.Equal(t, 1, ev.Count(finished))
				assert.Equal(t, 0, b.Metrics().InFlightCalls)
			})
		})
	}
}

// Promise: the permit is given back exactly once, before the loop statement
// completes, with FinishCall when "it returned after the loop body broke
// out". iter.Pull2 is a loop whose body is the caller of next: stop after
// one value ends it like a break (FinishCall); stop before any next never
// ranges, so asks for no permit.
func TestHostilePull2StopGivesThePermitBackLikeABreak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := partner(t, 1, 0)
		it := iterate.Seq(t.Context(), b, (&counted{b: b}).seq(1, 2, 3))

		next, stop := iter.Pull2(it)
		v, err, ok := next()
		require.True(t, ok)
		require.NoError(t, err)
		assert.Equal(t, 1, v)
		assert.Equal(t, 1, b.Metrics().InFlightCalls, "the permit is held between next calls")
		stop()
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
		assert.Equal(t, []bulkhead.EventType{permitted, finished}, ev.Types())

		_, stop = iter.Pull2(it)
		stop()
		assert.Equal(t, []bulkhead.EventType{permitted, finished}, ev.Types(), "a Pull2 stopped before next asked for a permit")
	})
}

// Promise: the permit is given back exactly once, whatever the source does.
// A source that keeps yielding after the loop body broke out makes Go panic
// at the loop ("continued iteration after ... returned false"); that panic
// unwinds through the iterator, which gives the permit back once, with
// FinishCall (the body had a value), and lets it go on.
func TestHostileASourceThatIgnoresTheBreakGivesThePermitBackOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := partner(t, 1, 0)
		stubborn := func(yield func(int) bool) {
			for _, v := range []int{1, 2, 3} {
				yield(v) // ignores false
			}
		}
		var got []int
		p := func() (r any) {
			defer func() { r = recover() }()
			for v, err := range iterate.Seq(t.Context(), b, iter.Seq[int](stubborn)) {
				require.NoError(t, err)
				got = append(got, v)
				break
			}
			return nil
		}()
		require.NotNil(t, p, "Go did not panic at the source that continued after the break")
		assert.Equal(t, []int{1}, got)
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
		assert.Equal(t, []bulkhead.EventType{permitted, finished}, ev.Types())
	})
}

// Promise: "ctx ends (then the request is withdrawn)", and the permit is
// given back exactly once. On the Acquisition path (a bulkhead that cannot
// block) the context's end races the grant: whichever wins, the loop yields
// the context's error or the values, the permit comes back once (a second
// give-back panics in the Semaphore) and nothing stays queued.
func TestHostileGrantRacingTheContextOnTheAcquisitionPath(t *testing.T) {
	b, _ := partner(t, 1, time.Hour)
	ranged, cancelled := 0, 0
	for i := range 2000 {
		require.True(t, b.TryAcquirePermission(), "iteration %d: the permit is still held", i)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan []error)
		src := &counted{b: b}
		go func() {
			_, errs := collect(iterate.Seq(ctx, asyncOnly{b}, src.seq(1)))
			done <- errs
		}()
		var wg sync.WaitGroup
		wg.Go(b.ReleasePermission)
		wg.Go(cancel)
		errs := <-done
		wg.Wait()
		if len(errs) == 0 {
			ranged++
			require.EqualValues(t, 1, src.ranged.Load(), "iteration %d", i)
		} else {
			cancelled++
			require.Len(t, errs, 1, "iteration %d", i)
			require.ErrorIs(t, errs[0], context.Canceled, "iteration %d", i)
			require.Zero(t, src.ranged.Load(), "iteration %d", i)
		}
		m := b.Metrics()
		require.Zero(t, m.InFlightCalls+m.QueuedCalls, "iteration %d: %+v", i, m)
	}
	t.Logf("ranged %d times, withdrawn %d times", ranged, cancelled)
}

// lateGrant is a bulkhead that can time calls and, like a Semaphore,
// publishes a grant (its first callback on the Acquisition) before the
// code the grant admits may run. Its publication waits until StartCall was
// called or a second has passed, so a StartCall that runs before the
// publication is seen, not raced.
type lateGrant struct {
	res          atomic.Pointer[bulkhead.Resolver]
	published    atomic.Bool
	startedEarly atomic.Bool
	startCalled  chan struct{}
	finished     atomic.Int32
}

func (f *lateGrant) Name() string { return "late" }

func (f *lateGrant) AcquirePermissionAsync() *bulkhead.Acquisition {
	a, r := bulkhead.PendingAcquisition(nil)
	a.OnDone(func(err error) { // the bulkhead's own, registered first
		if err == nil {
			select {
			case <-f.startCalled:
			case <-time.After(time.Second):
			}
			f.published.Store(true)
		}
	})
	f.res.Store(r)
	return a
}

func (f *lateGrant) ReleasePermission() { panic("lateGrant: ReleasePermission") }
func (f *lateGrant) FinishCall()        { f.finished.Add(1) }

func (f *lateGrant) StartCall() bulkhead.CallStart {
	if !f.published.Load() {
		f.startedEarly.Store(true)
	}
	close(f.startCalled)
	return bulkhead.CallStart{}
}

func (f *lateGrant) FinishCallStarted(bulkhead.CallStart) { f.finished.Add(1) }

// Promise: "With a bulkhead that can time calls (a bulkhead.CallTimer: a
// Semaphore, an adaptive bulkhead), the loop's CallFinished carries its
// duration (Event.CallDuration), from the grant to the end of the loop".
// A CallTimer's start is its latest published grant (callduration.go), and
// the core publishes a grant before it runs the Acquisition's callbacks,
// not before it closes Done. So a loop that waits on an Acquisition (an
// adaptive bulkhead is a CallTimer that cannot block) must start its call
// from a callback, after the grant was published, or it takes an older
// grant's stamp (and its CallPermitted can follow its CallFinished).
func TestHostileALoopOnTheAcquisitionPathStartsItsCallAfterTheGrantIsPublished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &lateGrant{startCalled: make(chan struct{})}
		done := make(chan []int)
		go func() {
			vs, errs := collect(iterate.Seq(t.Context(), bulkhead.Bulkhead(f), slices.Values([]int{1})))
			assert.Empty(t, errs)
			done <- vs
		}()
		synctest.Wait() // the loop waits for its permit
		f.res.Load().Grant()
		assert.Equal(t, []int{1}, <-done)
		assert.False(t, f.startedEarly.Load(), "the loop started its call before the bulkhead had published the grant")
		assert.EqualValues(t, 1, f.finished.Load())
	})
}
