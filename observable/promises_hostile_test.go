package observable_test

// Hostile readings of the package's doc promises: each test quotes the
// promise it tries, and tries it at an edge (the only permit held by
// someone else, a source that ignores its context, many pending
// observations, an eager rxgo operator).

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
	"github.com/rxbulkhead/bulkhead/observable"
)

// holdPermit takes the only permit of b or fails the test; the caller gives
// it back with b.ReleasePermission.
func holdPermit(t *testing.T, b *bulkhead.Semaphore) {
	t.Helper()
	if !b.TryAcquirePermission() {
		t.Fatal("could not take the only permit")
	}
}

// Package doc, "Options, Retry and BackOffRetry": "rxgo's Retry and
// BackOffRetry observe their source as soon as they are called, not when
// their result is observed: with them, the permit is requested when the
// pipeline is built." Building Retry on a full bulkhead queues a request
// before anyone observes, and the release runs the source with no observer.
func TestHostileRetryRequestsThePermitWhenThePipelineIsBuilt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, time.Hour)
		holdPermit(t, b)
		src := &rxtest.Probe{Items: []any{"ok"}}
		obs := observable.Bulkhead(b, src.Observable()).Retry(1, func(error) bool { return true })
		synctest.Wait()
		if q := b.Metrics().QueuedCalls; q != 1 {
			t.Fatalf("QueuedCalls = %d after building Retry, want 1 (Retry is eager)", q)
		}
		b.ReleasePermission()
		synctest.Wait()
		if n := src.Observed.Load(); n != 1 {
			t.Fatalf("source observed %d times after the release, want 1 with no observer yet", n)
		}
		if got := rxtest.Values(rxtest.Drain(obs.Observe())); !slices.Equal(got, []any{"ok"}) {
			t.Fatalf("items %v, want [ok]", got)
		}
		if got, want := ev.Types(), []bulkhead.EventType{rxtest.Permitted, rxtest.Permitted, rxtest.Finished}; !slices.Equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
	})
}

// "WithBufferedChannel sizes the channel Observe returns (when the permit is
// pending, before src is observed)": the capacity is there while the
// observation waits for the only permit, and src's items then fill it with
// no reader.
func TestHostileBufferedChannelOfAPendingObservationHasItsCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, time.Hour)
		holdPermit(t, b)
		src := &rxtest.Probe{Items: []any{1, 2, 3}}
		ch := observable.Bulkhead(b, src.Observable()).Observe(rxgo.WithBufferedChannel(3))
		synctest.Wait()
		if cap(ch) != 3 || b.Metrics().QueuedCalls != 1 || src.Observed.Load() != 0 {
			t.Fatalf("pending observation: cap %d, %d queued, source observed %d times; want 3, 1, 0", cap(ch), b.Metrics().QueuedCalls, src.Observed.Load())
		}
		b.ReleasePermission()
		synctest.Wait()
		if len(ch) != 3 || b.Metrics().InFlightCalls != 0 {
			t.Fatalf("after the grant: %d items buffered, %d permits held; want 3 and the permit back", len(ch), b.Metrics().InFlightCalls)
		}
		if got := rxtest.Values(rxtest.Drain(ch)); !slices.Equal(got, []any{1, 2, 3}) {
			t.Fatalf("items %v", got)
		}
	})
}

// "Cost": "An observation waiting for its permit holds no goroutine ...
// Given rxgo options (WithContext, WithBufferedChannel), Observe first lets
// rxgo evaluate them: one short-lived goroutine of rxgo.Defer hands their
// context over and ends before Observe returns." Many observations pending
// on a full bulkhead, each given a context, must not hold a goroutine each;
// ending their context withdraws every one.
func TestHostilePendingObservationsWithAContextHoldNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const pending = 200
		b, ev := rxtest.Partner(t, 1, time.Hour)
		holdPermit(t, b)
		ctx, cancel := context.WithCancel(t.Context())
		synctest.Wait()
		before := runtime.NumGoroutine()
		chans := make([]<-chan rxgo.Item, pending)
		for i := range chans {
			chans[i] = observable.Bulkhead(b, rxgo.Just(i)()).Observe(rxgo.WithContext(ctx), rxgo.WithBufferedChannel(1))
		}
		synctest.Wait()
		// The slack covers goroutines of the process outside the bubble;
		// one goroutine per pending observation would add 200.
		if grown := runtime.NumGoroutine() - before; grown > 10 || b.Metrics().QueuedCalls != pending {
			t.Fatalf("%d pending observations (%d queued) added %d goroutines, want none", pending, b.Metrics().QueuedCalls, grown)
		}
		cancel()
		for _, ch := range chans {
			rxtest.Drain(ch)
		}
		synctest.Wait()
		b.ReleasePermission()
		if q, n := b.Metrics().QueuedCalls, ev.Count(rxtest.Cancelled); q != 0 || n != pending {
			t.Fatalf("after the context ended: %d queued, %d cancelled; want 0 and %d", q, n, pending)
		}
	})
}

// "The permit is given back when ... the consumer's context ends while the
// source runs (... ReleasePermission otherwise), and the source's context
// is cancelled", and "Cancellation in rxgo is a request: the permit comes
// back when the subscription cancels the source's context, and a source
// that does not watch its context may run a little longer on its own
// goroutine." A source that ignores its context: the permit is back and
// the channel closed while the source still runs.
func TestHostileASourceThatIgnoresItsContextDoesNotKeepThePermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		started, finish, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
		deaf := rxgo.Defer([]rxgo.Producer{func(_ context.Context, _ chan<- rxgo.Item) {
			defer close(ended)
			close(started)
			<-finish // watches nothing else
		}})
		ctx, cancel := context.WithCancel(t.Context())
		ch := observable.Bulkhead(b, deaf).Observe(rxgo.WithContext(ctx))
		<-started
		cancel()
		if items := rxtest.Drain(ch); len(items) != 0 {
			t.Fatalf("items %v, want none", items)
		}
		synctest.Wait()
		select {
		case <-ended:
			t.Fatal("the deaf source ended: the test proves nothing")
		default:
		}
		if m := b.Metrics(); m.InFlightCalls != 0 {
			t.Fatalf("%d permits held while the deaf source still runs, want 0", m.InFlightCalls)
		}
		if got, want := ev.Types(), []bulkhead.EventType{rxtest.Permitted}; !slices.Equal(got, want) {
			t.Fatalf("events %v, want %v (released, not finished: no item came)", got, want)
		}
		again := observable.Bulkhead(b, rxgo.Just("next")())
		if got := rxtest.Values(rxtest.Drain(again.Observe())); !slices.Equal(got, []any{"next"}) {
			t.Fatalf("next observation on the freed permit: %v", got)
		}
		close(finish)
		<-ended
	})
}

// Bulkhead: "A rejected subscription emits one error item holding the
// *bulkhead.FullError and closes without observing src", also for a
// subscription made by the source of another one on the same bulkhead (a
// pipeline re-entering its own bulkhead with one permit and no queue): the
// inner one is rejected, the outer one goes on and ends with its permit
// finished.
func TestHostileASourceReenteringItsOwnFullBulkheadIsRejectedNotBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		inner := &rxtest.Probe{Items: []any{"inner"}}
		outer := rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
			for it := range observable.Bulkhead(b, inner.Observable()).Observe(rxgo.WithContext(ctx)) {
				it.SendContext(ctx, next)
			}
			rxgo.Of("outer").SendContext(ctx, next)
		}})
		items := rxtest.Drain(observable.Bulkhead(b, outer).Observe())
		var fe *bulkhead.FullError
		if len(items) != 2 || !errors.As(items[0].E, &fe) || fe.Reason != bulkhead.NoWait || items[1].V != "outer" {
			t.Fatalf("items %v, want the inner FullError (NoWait), then outer", items)
		}
		if n := inner.Observed.Load(); n != 0 {
			t.Fatalf("the rejected inner source was observed %d times", n)
		}
		if got, want := ev.Types(), []bulkhead.EventType{rxtest.Permitted, rxtest.Rejected, rxtest.Finished}; !slices.Equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
	})
}
