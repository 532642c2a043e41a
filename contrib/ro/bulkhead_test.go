package ro_test

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/samber/ro"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bulkhead "github.com/rxbulkhead/bulkhead"
	bro "github.com/rxbulkhead/bulkhead/contrib/ro"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func partner(t testing.TB, permits int, wait time.Duration) (*bulkhead.Semaphore, *testkit.EventLog) {
	t.Helper()
	b, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: permits, MaxWaitDuration: wait, MaxQueuedCalls: bulkhead.Unbounded})
	require.NoError(t, err)
	testkit.CheckPermits(t, b)
	return b, testkit.RecordEvents(t, b)
}

// collector is an Observer that records what it receives.
type collector struct {
	mu     sync.Mutex
	values []int
	err    error
	done   bool
}

func (c *collector) observer() ro.Observer[int] {
	return ro.NewObserver(
		func(v int) { c.mu.Lock(); c.values = append(c.values, v); c.mu.Unlock() },
		func(err error) { c.mu.Lock(); c.err, c.done = err, true; c.mu.Unlock() },
		func() { c.mu.Lock(); c.done = true; c.mu.Unlock() },
	)
}

func (c *collector) result() ([]int, error, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.values, c.err, c.done
}

func TestEachSubscriptionTakesItsOwnPermitAndBuildingTakesNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := partner(t, 1, 0)
		obs := ro.Pipe1(ro.Just(1, 2, 3), bro.Transformer[int](b))
		assert.Empty(t, ev.Types())
		for range 2 {
			vs, err := ro.Collect(obs)
			require.NoError(t, err)
			assert.Equal(t, []int{1, 2, 3}, vs)
		}
		assert.Equal(t, []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallFinished, bulkhead.CallPermitted, bulkhead.CallFinished}, ev.Types())
	})
}

func TestTheOperatorComposesInPipeWithRosOwnOperators(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := partner(t, 2, 0)
		double := ro.Map(func(v int) int { return 2 * v })
		vs, err := ro.Collect(ro.Pipe3(ro.Just(1, 2), double, bro.Transformer[int](b), double))
		require.NoError(t, err)
		assert.Equal(t, []int{4, 8}, vs)
	})
}

// The permit comes back before the subscriber sees the end.
func TestThePermitIsBackWhenTheSubscriberReceivesTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := partner(t, 1, 0)
		var inFlight []int
		record := func() { inFlight = append(inFlight, b.Metrics().InFlightCalls) }
		bro.Bulkhead(b, ro.Just(1)).Subscribe(ro.NewObserver(func(int) { record() }, func(error) {}, record))
		bro.Bulkhead(b, ro.Throw[int](errors.New("boom"))).Subscribe(ro.NewObserver(func(int) {}, func(error) { record() }, func() {}))
		assert.Equal(t, []int{1, 0, 0}, inFlight, "held during Next, back at Complete and at Error")
	})
}

// A later grant subscribes the source on the goroutine that gave the
// permit back, inside its ReleasePermission: a synchronous source has
// emitted and completed before that call returns (package doc).
func TestALaterGrantRunsASynchronousSourceInsideTheRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		var c collector
		bro.Bulkhead(b, ro.Just(7, 8)).Subscribe(c.observer())
		synctest.Wait()
		vs, _, done := c.result()
		require.Empty(t, vs)
		require.False(t, done)

		b.ReleasePermission()
		vs, err, done := c.result() // no synctest.Wait: it all ran inside the release
		assert.Equal(t, []int{7, 8}, vs)
		assert.NoError(t, err)
		assert.True(t, done)
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
	})
}

func TestARejectionIsOneFullErrorAndTheSourceIsNeverSubscribed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := partner(t, 1, 0)
		require.True(t, b.TryAcquirePermission())
		defer b.ReleasePermission()
		subscribed := false
		src := ro.Defer(func() ro.Observable[int] { subscribed = true; return ro.Just(1) })
		_, err := ro.Collect(bro.Bulkhead(b, src))
		var full *bulkhead.FullError
		require.ErrorAs(t, err, &full)
		assert.ErrorIs(t, err, bulkhead.ErrBulkheadFull)
		assert.Equal(t, "partner", full.Name)
		assert.False(t, subscribed)
	})
}

// pipelineGoroutines counts the goroutines of the caller's synctest bubble
// that run ro's code or ours.
func pipelineGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if strings.Contains(header, "synctest bubble") && (strings.Contains(g, "github.com/samber/ro.") || strings.Contains(g, "contrib/ro.")) {
			n++
		}
	}
	return n
}

func TestPendingSubscriptionsParkNoGoroutineAndUnsubscribingWithdrawsThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		subs := make([]ro.Subscription, 100)
		for i := range subs {
			subs[i] = bro.Bulkhead(b, ro.Just(i)).Subscribe(ro.NoopObserver[int]())
		}
		synctest.Wait()
		assert.Equal(t, 100, b.Metrics().QueuedCalls)
		assert.Zero(t, pipelineGoroutines())
		for _, s := range subs {
			s.Unsubscribe()
		}
		assert.Equal(t, 0, b.Metrics().QueuedCalls)
		b.ReleasePermission()
		assert.Equal(t, 100, ev.Count(bulkhead.CallCancelled))
		assert.Zero(t, ev.Count(bulkhead.CallFinished), "a withdrawn subscription ran")
	})
}

func TestNilArgumentsPanicWithAMessageNamingThem(t *testing.T) {
	b, _ := partner(t, 1, 0)
	assert.PanicsWithValue(t, "ro: Bulkhead called with a nil bulkhead.Bulkhead", func() { bro.Bulkhead(nil, ro.Just(1)) })
	assert.PanicsWithValue(t, "ro: Bulkhead called with a nil source ro.Observable", func() { bro.Bulkhead[int](b, nil) })
	assert.PanicsWithValue(t, "ro: Transformer called with a nil bulkhead.Bulkhead", func() { bro.Transformer[int](nil) })
	var none *bulkhead.Semaphore // a nil pointer in the interface is nil too
	assert.PanicsWithValue(t, "ro: Bulkhead called with a nil bulkhead.Bulkhead", func() { bro.Bulkhead(none, ro.Just(1)) })
	assert.PanicsWithValue(t, "ro: Transformer called with a nil bulkhead.Bulkhead", func() { bro.Transformer[int](none) })
}

// TestGrantRacingUnsubscribeNeverLeaksAPermit hammers the race between a
// grant and Unsubscribe on real goroutines, with a source that never ends
// by itself: whichever wins, the permit comes back exactly once (a second
// release panics in the Semaphore) and nothing stays queued.
func TestGrantRacingUnsubscribeNeverLeaksAPermit(t *testing.T) {
	b, _ := partner(t, 1, time.Hour)
	held := ro.NewObservable(func(dst ro.Observer[int]) ro.Teardown { dst.Next(1); return nil })
	for i := range 3000 {
		require.True(t, b.TryAcquirePermission(), "iteration %d: the permit is still held", i)
		sub := bro.Bulkhead(b, held).Subscribe(ro.NoopObserver[int]())
		var wg sync.WaitGroup
		wg.Go(b.ReleasePermission)
		wg.Go(sub.Unsubscribe)
		wg.Wait()
		sub.Unsubscribe() // granted first: the subscription holds the permit until now
		m := b.Metrics()
		require.Zero(t, m.InFlightCalls+m.QueuedCalls, "iteration %d: %+v", i, m)
	}
}

// A source that subscribes another subscription of the same full bulkhead
// from inside its own subscription (re-entrance): the inner one queues, and
// is granted on the goroutine that ends the outer one, nested in its FinishCall.
func TestASourceThatSubscribesTheSameBulkheadAgainQueuesAndRunsAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := partner(t, 1, time.Hour)
		var inner collector
		outer := ro.NewObservable(func(dst ro.Observer[int]) ro.Teardown {
			bro.Bulkhead(b, ro.Just(2)).Subscribe(inner.observer())
			if got := b.Metrics().QueuedCalls; got != 1 {
				t.Errorf("the inner subscription is not queued behind the outer one: %d queued", got)
			}
			dst.Next(1)
			dst.Complete()
			return nil
		})
		vs, err := ro.Collect(bro.Bulkhead(b, outer))
		require.NoError(t, err)
		assert.Equal(t, []int{1}, vs)
		got, err, done := inner.result()
		assert.Equal(t, []int{2}, got)
		assert.NoError(t, err)
		assert.True(t, done)
	})
}

// A subscriber whose Next panics: ro turns the panic into an Error of the
// source's subscription, which gives the permit back.
func TestASubscriberThatPanicsGetsThePermitBackThroughRosError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := partner(t, 1, 0)
		var got error
		bro.Bulkhead(b, ro.Just(1, 2)).Subscribe(ro.NewObserver(
			func(int) { panic("subscriber") },
			func(err error) { got = err },
			func() {},
		))
		require.Error(t, got)
		assert.Contains(t, got.Error(), "subscriber")
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
		assert.Equal(t, []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallFinished}, ev.Types())
	})
}

// TestHammerSubscriptionsUnderContention subscribes from several
// goroutines to a 2-permit bulkhead, with sources that complete, fail or
// hold, and unsubscribes a random part of them at a random moment
// (before the grant, while the source runs, from another goroutine). Every
// subscription must end and every permit come back (partner's leak check).
func TestHammerSubscriptionsUnderContention(t *testing.T) {
	b, _ := partner(t, 2, time.Hour)
	boom := errors.New("boom")
	sources := []ro.Observable[int]{
		ro.Just(1, 2, 3),
		ro.Throw[int](boom),
		ro.NewObservable(func(dst ro.Observer[int]) ro.Teardown { dst.Next(1); return nil }), // holds
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for i := range 400 {
				src := sources[(w+i)%len(sources)]
				sub := bro.Bulkhead(b, src).Subscribe(ro.NoopObserver[int]())
				switch i % 3 {
				case 0:
					sub.Unsubscribe()
				case 1:
					done := make(chan struct{})
					go func() { sub.Unsubscribe(); close(done) }()
					<-done
				default:
					runtime.Gosched()
					sub.Unsubscribe()
				}
			}
		})
	}
	wg.Wait()
	m := b.Metrics()
	require.Zero(t, m.InFlightCalls+m.QueuedCalls, "%+v", m)
}
