package rxtest

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
)

// Suite is the behaviour every bulkhead operator over rxgo shares, run
// against one operator: the operator's package runs it against its public
// entry point, package rxpermit against what it builds.
type Suite struct {
	// Apply puts b around src (a cold Observable), in the shape of the
	// operator under test (wrap src with ColdSingle or ColdOptionalSingle
	// for a Single or a Maybe operator). opts are the operator's options.
	Apply func(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) rxgo.Iterable
	// First: the operator forwards the source's first item only, and gives
	// the permit back when it arrives (Single, Maybe); otherwise it forwards
	// every item (Observable).
	First bool
}

// Run runs each behaviour as a subtest of t, each inside a testing/synctest
// bubble of its own except for the grant-racing-cancel hammer, which needs
// real goroutines.
func (s Suite) Run(t *testing.T) {
	t.Helper()
	for _, c := range []struct {
		name string
		f    func(t *testing.T)
	}{
		{"building takes no permit and each observation takes its own", s.eachObservationTakesItsOwnPermit},
		{"the source's end or a Single's value completes the permit", s.completesAtTheEnd},
		{"an empty source completes the permit", s.emptySourceCompletes},
		{"an error item is forwarded like any item and the permit is back at the end", s.errorItemIsForwarded},
		{"without a context given, the source keeps its own: cancelling it ends the observation", s.sourceKeepsItsOwnContext},
		{"the channel has the capacity of the source's", s.sourceCapacity},
		{"Observe returns at once when full and queues until a release", s.queuesUntilARelease},
		{"queued observations are granted in FIFO order", s.fifo},
		{"a context ended before Observe asks for no permit", s.endedBeforeObserve},
		{"cancel while pending withdraws without consuming a permit", s.cancelWhilePending},
		{"cancel after a queued grant and before any item releases without finishing", s.cancelAfterGrant},
		{"an error after a queued grant completes the permit", s.errorAfterGrant},
		{"cancel after an item completes the permit", s.cancelAfterAnItem},
		{"options apply to every observation and Observe's come last", s.options},
	} {
		t.Run(c.name, func(t *testing.T) { synctest.Test(t, c.f) })
	}
	t.Run("rejected: one FullError item and the source is never observed", s.rejected)
	t.Run("grant racing cancel never leaks a permit", func(t *testing.T) {
		b, _ := Partner(t, 1, time.Hour)
		GrantRacingCancel(t, b, s.Apply(b, (&Probe{Items: []any{1}}).Observable()), 1, 3000)
	})
}

// forwarded is what the operator forwards of items, and what a source
// emits in a test: a Single's source emits one item.
func (s Suite) forwarded(items ...any) []any {
	if s.First {
		return items[:1]
	}
	return items
}

func (s Suite) eachObservationTakesItsOwnPermit(t *testing.T) {
	b, ev := Partner(t, 1, 0)
	src := &Probe{Items: s.forwarded("a", "b")}
	obs := s.Apply(b, src.Observable())
	synctest.Wait()
	assert.Empty(t, ev.Types(), "building asked for a permit")
	assert.Zero(t, src.Observed.Load(), "building observed the source")
	for range 2 {
		assert.Equal(t, s.forwarded("a", "b"), Values(Drain(obs.Observe())))
	}
	assert.Equal(t, int32(2), src.Observed.Load())
	assert.Equal(t, []bulkhead.EventType{Permitted, Finished, Permitted, Finished}, ev.Types())
}

func (s Suite) completesAtTheEnd(t *testing.T) {
	b, ev := Partner(t, 1, 0)
	// With First, Hold checks that the first item stops the source (the
	// bubble and goleak catch a source left running): it can, the
	// consumer having given a context.
	src := &Probe{Items: []any{"a", "b"}, Hold: s.First}
	ch := s.Apply(b, src.Observable()).Observe(rxgo.WithContext(t.Context()))
	if s.First {
		synctest.Wait() // the value waits for its reader
		assert.Equal(t, 0, b.Metrics().InFlightCalls, "the permit is back before the value is read")
	}
	assert.Equal(t, s.forwarded("a", "b"), Values(Drain(ch)))
	assert.Equal(t, 0, b.Metrics().InFlightCalls, "the permit is back when the channel closes")
	assert.Equal(t, []bulkhead.EventType{Permitted, Finished}, ev.Types())
}

func (s Suite) emptySourceCompletes(t *testing.T) {
	b, ev := Partner(t, 1, 0)
	assert.Empty(t, Drain(s.Apply(b, (&Probe{}).Observable()).Observe()))
	assert.Equal(t, []bulkhead.EventType{Permitted, Finished}, ev.Types())
}

func (s Suite) errorItemIsForwarded(t *testing.T) {
	b, ev := Partner(t, 1, 0)
	boom := errors.New("boom")
	ch := s.Apply(b, (&Probe{Items: s.forwarded(boom, "after")}).Observable()).Observe()
	it := <-ch
	require.ErrorIs(t, it.E, boom)
	if s.First {
		synctest.Wait()
		assert.Equal(t, 0, b.Metrics().InFlightCalls, "a Single's error item is its only item")
	} else {
		assert.Equal(t, 1, b.Metrics().InFlightCalls, "the source has not ended")
		assert.Equal(t, []any{"after"}, Values(Drain(ch)), "the consumer decides whether an error ends the stream")
	}
	_, open := <-ch
	assert.False(t, open)
	assert.Equal(t, 0, b.Metrics().InFlightCalls)
	assert.Equal(t, []bulkhead.EventType{Permitted, Finished}, ev.Types())
}

func (s Suite) sourceKeepsItsOwnContext(t *testing.T) {
	b, ev := Partner(t, 1, 0)
	ctx, cancel := context.WithCancel(t.Context())
	src := &Probe{Hold: true, Opts: []rxgo.Option{rxgo.WithContext(ctx)}}
	ch := s.Apply(b, src.Observable()).Observe()
	synctest.Wait()
	require.Equal(t, 1, b.Metrics().InFlightCalls)
	cancel()
	assert.Empty(t, Drain(ch))
	assert.Equal(t, 0, b.Metrics().InFlightCalls)
	assert.Equal(t, []bulkhead.EventType{Permitted, Finished}, ev.Types())
}

func (s Suite) sourceCapacity(t *testing.T) {
	b, _ := Partner(t, 1, 0)
	src := &Probe{Items: []any{1}, Opts: []rxgo.Option{rxgo.WithBufferedChannel(5)}}
	ch := s.Apply(b, src.Observable()).Observe()
	assert.Equal(t, 5, cap(ch))
	assert.Equal(t, []any{1}, Values(Drain(ch)))
}

func (s Suite) rejected(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    bulkhead.Config
		reason bulkhead.Reason
	}{
		{"no wait", bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.NoWait},
		{"queue full", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1}, bulkhead.QueueFull},
		{"wait timeout", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WaitTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, ev := Partner(t, 1, 0)
				require.NoError(t, b.ChangeConfig(tc.cfg))
				require.True(t, b.TryAcquirePermission())
				var queued <-chan rxgo.Item
				if tc.reason == bulkhead.QueueFull {
					queued = s.Apply(b, (&Probe{Items: []any{0}}).Observable()).Observe()
					synctest.Wait()
				}
				src := &Probe{Items: []any{1}}
				start := time.Now()
				items := Drain(s.Apply(b, src.Observable()).Observe())

				require.Len(t, items, 1)
				var full *bulkhead.FullError
				require.ErrorAs(t, items[0].E, &full)
				assert.ErrorIs(t, items[0].E, bulkhead.ErrBulkheadFull)
				assert.Equal(t, tc.reason, full.Reason)
				assert.Equal(t, "partner", full.Name)
				assert.Zero(t, src.Observed.Load(), "a rejected observation observed its source")
				if tc.reason == bulkhead.WaitTimeout {
					assert.Equal(t, time.Second, time.Since(start), "rejected at MaxWaitDuration")
				}
				assert.NotContains(t, ev.Types()[1:], Finished, "a rejection never completes a permit")

				b.ReleasePermission()
				if queued != nil {
					assert.Equal(t, []any{0}, Values(Drain(queued)))
				}
			})
		})
	}
}

func (s Suite) queuesUntilARelease(t *testing.T) {
	b, ev := Partner(t, 1, time.Hour)
	require.True(t, b.TryAcquirePermission())
	src := &Probe{Items: s.forwarded("a", "b")}
	ch := s.Apply(b, src.Observable()).Observe() // must not block
	synctest.Wait()
	assert.Equal(t, 1, b.Metrics().QueuedCalls)
	assert.Zero(t, src.Observed.Load(), "source observed before the grant")
	select {
	case it := <-ch:
		t.Fatalf("item %v before the grant", it)
	default:
	}

	b.FinishCall()
	assert.Equal(t, s.forwarded("a", "b"), Values(Drain(ch)))
	assert.Equal(t, int32(1), src.Observed.Load())
	assert.Equal(t, []bulkhead.EventType{Permitted, Finished, Permitted, Finished}, ev.Types())
}

func (s Suite) fifo(t *testing.T) {
	b, _ := Partner(t, 1, time.Hour)
	require.True(t, b.TryAcquirePermission())
	var order []int
	chs := make([]<-chan rxgo.Item, 4)
	for i := range chs {
		src := rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
			order = append(order, i) // one permit: sources never run concurrently
			rxgo.Of(i).SendContext(ctx, next)
		}})
		chs[i] = s.Apply(b, src).Observe()
		synctest.Wait() // queue them in index order
	}
	assert.Equal(t, 4, b.Metrics().QueuedCalls)
	assert.Empty(t, order)

	b.ReleasePermission()
	got := make([][]any, len(chs))
	done := make(chan int)
	for i, ch := range chs {
		go func() { got[i] = Values(Drain(ch)); done <- i }()
	}
	for range chs {
		<-done
	}
	assert.Equal(t, []int{0, 1, 2, 3}, order)
	for i := range chs {
		assert.Equal(t, []any{i}, got[i])
	}
}

func (s Suite) endedBeforeObserve(t *testing.T) {
	b, ev := Partner(t, 1, 0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	src := &Probe{Items: []any{1}}
	assert.Empty(t, Drain(s.Apply(b, src.Observable()).Observe(rxgo.WithContext(ctx))))
	assert.Empty(t, ev.Types())
	assert.Zero(t, src.Observed.Load())
}

func (s Suite) cancelWhilePending(t *testing.T) {
	b, ev := Partner(t, 1, time.Hour)
	require.True(t, b.TryAcquirePermission())
	ctx, cancel := context.WithCancel(t.Context())
	src := &Probe{Items: []any{1}}
	ch := s.Apply(b, src.Observable()).Observe(rxgo.WithContext(ctx))
	synctest.Wait()
	require.Equal(t, 1, b.Metrics().QueuedCalls)

	cancel()
	assert.Empty(t, Drain(ch))
	assert.Equal(t, 0, b.Metrics().QueuedCalls)
	assert.Equal(t, 1, b.Metrics().InFlightCalls, "only the test's own permit is held")
	b.ReleasePermission()
	synctest.Wait()
	assert.Equal(t, 0, b.Metrics().InFlightCalls, "the withdrawn observation took the released permit")
	assert.Zero(t, src.Observed.Load())
	assert.Equal(t, []bulkhead.EventType{Permitted, Cancelled}, ev.Types())
}

func (s Suite) cancelAfterGrant(t *testing.T) {
	b, ev := Partner(t, 1, time.Hour)
	require.True(t, b.TryAcquirePermission())
	ctx, cancel := context.WithCancel(t.Context())
	src := &Probe{Hold: true} // runs, emits nothing, until cancelled
	ch := s.Apply(b, src.Observable()).Observe(rxgo.WithContext(ctx))
	synctest.Wait()
	b.ReleasePermission() // the queued observation is granted
	synctest.Wait()
	require.Equal(t, int32(1), src.Observed.Load())
	require.Equal(t, 1, b.Metrics().InFlightCalls)

	cancel()
	assert.Empty(t, Drain(ch))
	assert.Equal(t, []bulkhead.EventType{Permitted, Permitted}, ev.Types(), "ReleasePermission: no CallFinished")
}

func (s Suite) errorAfterGrant(t *testing.T) {
	b, ev := Partner(t, 1, time.Hour)
	require.True(t, b.TryAcquirePermission())
	boom := errors.New("boom")
	ch := s.Apply(b, (&Probe{Items: []any{boom}}).Observable()).Observe()
	synctest.Wait()
	b.ReleasePermission()
	items := Drain(ch)
	require.Len(t, items, 1)
	assert.ErrorIs(t, items[0].E, boom)
	assert.Equal(t, []bulkhead.EventType{Permitted, Permitted, Finished}, ev.Types())
}

func (s Suite) cancelAfterAnItem(t *testing.T) {
	if s.First {
		t.Skip("the first item ends the call: nothing is left to cancel")
	}
	for _, read := range []int{
		2, // the observation waits for the held source
		1, // the observation waits for the consumer to take item 2
	} {
		b, ev := Partner(t, 1, 0)
		ctx, cancel := context.WithCancel(t.Context())
		ch := s.Apply(b, (&Probe{Items: []any{1, 2}, Hold: true}).Observable()).Observe(rxgo.WithContext(ctx))
		for range read {
			<-ch
		}
		synctest.Wait()
		assert.Equal(t, 1, b.Metrics().InFlightCalls)
		cancel()
		Drain(ch)
		assert.Equal(t, []bulkhead.EventType{Permitted, Finished}, ev.Types(), "read %d: an item was delivered: FinishCall", read)
	}
}

func (s Suite) options(t *testing.T) {
	b, _ := Partner(t, 1, 0)
	obs := s.Apply(b, (&Probe{Items: []any{1}}).Observable(), rxgo.WithBufferedChannel(1))
	for range 2 {
		ch := obs.Observe()
		assert.Equal(t, 1, cap(ch))
		synctest.Wait()
		assert.Len(t, ch, 1, "the item went into the buffer without a reader")
		assert.Equal(t, 0, b.Metrics().InFlightCalls)
		Drain(ch)
	}
	ch := obs.Observe(rxgo.WithBufferedChannel(3))
	assert.Equal(t, 3, cap(ch), "Observe's options come after the operator's")
	Drain(ch)
}
