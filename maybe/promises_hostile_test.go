package maybe_test

// Hostile readings of the package's doc promises: each test quotes the
// promise it tries, and tries it at an edge (the only permit held by
// someone else, no queue, a context that ends while the call waits, an
// empty source behind Map).

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
	"github.com/rxbulkhead/bulkhead/maybe"
)

// holdPermit takes the only permit of b or fails the test; the caller gives
// it back with b.ReleasePermission.
func holdPermit(t *testing.T, b *bulkhead.Semaphore) {
	t.Helper()
	if !b.TryAcquirePermission() {
		t.Fatal("could not take the only permit")
	}
}

// Package doc: "a request still waiting when the consumer's context ends is
// withdrawn without taking a permit", for the returned OptionalSingle and
// "those its Map return[s]". With the only permit held elsewhere, Get and
// Map(...).Get return the context's error, leave nothing queued and never
// observe the source.
func TestHostileGetAndMapGetWithdrawWhenTheirContextEndsWhileWaiting(t *testing.T) {
	double := func(_ context.Context, v any) (any, error) { return v.(int) * 2, nil }
	for name, get := range map[string]func(m rxgo.OptionalSingle, opts ...rxgo.Option) (rxgo.Item, error){
		"Get":     func(m rxgo.OptionalSingle, opts ...rxgo.Option) (rxgo.Item, error) { return m.Get(opts...) },
		"Map.Get": func(m rxgo.OptionalSingle, opts ...rxgo.Option) (rxgo.Item, error) { return m.Map(double).Get(opts...) },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, ev := rxtest.Partner(t, 1, time.Hour)
				holdPermit(t, b)
				src := &rxtest.Probe{Items: []any{1}}
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				if _, err := get(maybe.Bulkhead(b, src.OptionalSingle()), rxgo.WithContext(ctx)); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Get = %v, want DeadlineExceeded", err)
				}
				synctest.Wait()
				if q := b.Metrics().QueuedCalls; q != 0 {
					t.Fatalf("%d calls still queued after Get gave up", q)
				}
				b.ReleasePermission()
				synctest.Wait()
				if n := src.Observed.Load(); n != 0 {
					t.Fatalf("source observed %d times by a withdrawn call", n)
				}
				if got, want := ev.Types(), []bulkhead.EventType{rxtest.Permitted, rxtest.Cancelled}; !slices.Equal(got, want) {
					t.Fatalf("events %v, want %v (the holder's permit, the withdrawal)", got, want)
				}
			})
		})
	}
}

// Bulkhead: "A rejected observation emits one error item holding the
// *bulkhead.FullError and closes without observing src", and Get returns an
// error item as an item (rxgo's rule): on a full bulkhead with no queue,
// Get gives the FullError item with a nil error, and Map's Get does too,
// its func never called.
func TestHostileGetOnAFullBulkheadWithoutAQueueReturnsTheRejectionAsAnItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		holdPermit(t, b)
		defer b.ReleasePermission()
		src := &rxtest.Probe{Items: []any{1}}
		m := maybe.Bulkhead(b, src.OptionalSingle())
		mapped := false
		for name, get := range map[string]func() (rxgo.Item, error){
			"Get": func() (rxgo.Item, error) { return m.Get() },
			"Map.Get": func() (rxgo.Item, error) {
				return m.Map(func(context.Context, any) (any, error) { mapped = true; return 0, nil }).Get()
			},
		} {
			it, err := get()
			var fe *bulkhead.FullError
			if err != nil || !errors.As(it.E, &fe) || fe.Reason != bulkhead.NoWait {
				t.Fatalf("%s on a full bulkhead = %+v, %v; want a *FullError (NoWait) item and a nil error", name, it, err)
			}
		}
		if n := src.Observed.Load(); n != 0 || mapped {
			t.Fatalf("a rejected call observed the source %d times (Map's func called %v)", n, mapped)
		}
		if got, want := ev.Types(), []bulkhead.EventType{rxtest.Permitted, rxtest.Rejected, rxtest.Rejected}; !slices.Equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
	})
}

// Package doc: "The permit is given back with FinishCall as soon as the
// source ... completes empty", and Map's OptionalSingle stays empty: Get
// through Map of an empty source is rxgo.OptionalSingleEmpty, the permit is
// finished (not merely released) and Map's func is never called.
func TestHostileMapOfAnEmptySourceIsEmptyAndFinishesThePermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		src := &rxtest.Probe{}
		mapped := false
		it, err := maybe.Bulkhead(b, src.OptionalSingle()).Map(func(context.Context, any) (any, error) { mapped = true; return 0, nil }).Get()
		if err != nil || it != rxgo.OptionalSingleEmpty || mapped {
			t.Fatalf("Map(...).Get of an empty source = %+v, %v (func called %v); want OptionalSingleEmpty", it, err, mapped)
		}
		synctest.Wait()
		if got, want := ev.Types(), []bulkhead.EventType{rxtest.Permitted, rxtest.Finished}; !slices.Equal(got, want) || b.Metrics().InFlightCalls != 0 {
			t.Fatalf("events %v (%d permits held), want %v", got, b.Metrics().InFlightCalls, want)
		}
	})
}
