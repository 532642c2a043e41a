package single_test

// Hostile readings of the package's doc promises: each test quotes the
// promise it tries, and tries it at an edge (the only permit held by
// someone else, a context that ends while the call waits or while fn runs,
// a closed pool, a panicking fn, a queue wait that expires).

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
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/single"
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
// withdrawn without taking a permit", also for "those its Map and Filter
// return", whose Get "learns its context on a goroutine rxgo.Defer starts
// for the call". With the only permit held elsewhere, Get on Map's and on
// Filter's result returns the context's error, leaves nothing queued and
// never observes the source.
func TestHostileGetOnMapOrFilterWithdrawsWhenItsContextEndsWhileWaiting(t *testing.T) {
	double := func(_ context.Context, v any) (any, error) { return v.(int) * 2, nil }
	for name, get := range map[string]func(s rxgo.Single, opts ...rxgo.Option) (rxgo.Item, error){
		"Map": func(s rxgo.Single, opts ...rxgo.Option) (rxgo.Item, error) { return s.Map(double).Get(opts...) },
		"Filter": func(s rxgo.Single, opts ...rxgo.Option) (rxgo.Item, error) {
			return s.Filter(func(any) bool { return true }).Get(opts...)
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, ev := rxtest.Partner(t, 1, time.Hour)
				holdPermit(t, b)
				src := &rxtest.Probe{Items: []any{1}}
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				if _, err := get(single.Bulkhead(b, src.Single()), rxgo.WithContext(ctx)); !errors.Is(err, context.DeadlineExceeded) {
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
					t.Fatalf("events %v, want %v (the holder's permit, the withdrawal; ReleasePermission publishes nothing)", got, want)
				}
			})
		})
	}
}

// Run: "the returned channel closes when the observation ends or the
// context of opts ends". A Run waiting for the only permit, whose context
// ends, is closed and withdrawn; the permit's release afterwards grants
// nobody.
func TestHostileRunWaitingForThePermitEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, time.Hour)
		holdPermit(t, b)
		src := &rxtest.Probe{Items: []any{1}}
		ctx, cancel := context.WithCancel(t.Context())
		done := single.Bulkhead(b, src.Single()).Run(rxgo.WithContext(ctx))
		synctest.Wait()
		if q := b.Metrics().QueuedCalls; q != 1 {
			t.Fatalf("QueuedCalls = %d, want the Run queued", q)
		}
		cancel()
		<-done
		synctest.Wait()
		b.ReleasePermission()
		synctest.Wait()
		if n := src.Observed.Load(); n != 0 || b.Metrics().InFlightCalls != 0 {
			t.Fatalf("after the Run's context ended: source observed %d times, %d permits held", n, b.Metrics().InFlightCalls)
		}
		if got, want := ev.Types(), []bulkhead.EventType{rxtest.Permitted, rxtest.Cancelled}; !slices.Equal(got, want) {
			t.Fatalf("events %v, want %v (the holder's permit, the withdrawal)", got, want)
		}
	})
}

// FromPool: "when it ends, ... a running task's context is cancelled", and
// the observer "need not wait" for the task: the channel closes when the
// observation's context ends, while fn, which has seen its context end, is
// still returning.
func TestHostileFromPoolObservationEndingCancelsTheRunningTaskWithoutWaitingForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := soapPool(t, pool.Config{MaxWorkers: 1})
		started, sawEnd, finish := make(chan struct{}), make(chan error, 1), make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		ch := single.FromPool(p, func(ctx context.Context) (int, error) {
			close(started)
			<-ctx.Done()
			sawEnd <- ctx.Err()
			<-finish // a slow cleanup: the observer must not wait for it
			return 0, ctx.Err()
		}).Observe(rxgo.WithContext(ctx))
		<-started
		cancel()
		if items := rxtest.Drain(ch); len(items) != 0 {
			t.Fatalf("items %v, want none: the consumer ended the observation", items)
		}
		if err := <-sawEnd; err != context.Canceled {
			t.Fatalf("fn's context ended with %v, want context.Canceled", err)
		}
		if m := p.Metrics(); m.ActiveWorkers != 1 {
			t.Fatalf("ActiveWorkers = %d, want fn still running when the channel closed", m.ActiveWorkers)
		}
		close(finish)
	})
}

// FromPool: "a closed pool [emits] one [item] holding pool.ErrClosed", and
// "A panic in fn is emitted as a *pool.PanicError"; the worker survives the
// panic and serves the next observation.
func TestHostileFromPoolClosedPoolAndPanickingFnEachEmitOneErrorItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := soapPool(t, pool.Config{MaxWorkers: 1, CoreWorkers: 1})
		cause := errors.New("legacy client exploded")
		items := rxtest.Drain(single.FromPool(p, func(context.Context) (int, error) { panic(cause) }).Observe())
		var pe *pool.PanicError
		if len(items) != 1 || !errors.As(items[0].E, &pe) || pe.Value != cause || !errors.Is(items[0].E, cause) {
			t.Fatalf("items %v from a panicking fn, want one *pool.PanicError wrapping the panic value", items)
		}
		synctest.Wait() // the worker is idle again
		if it, err := single.FromPool(p, func(context.Context) (int, error) { return 2, nil }).Get(); err != nil || it.V != 2 {
			t.Fatalf("after the panic: %+v, %v; want the worker to serve the next one", it, err)
		}
		synctest.Wait()
		if err := p.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		ran := false
		items = rxtest.Drain(single.FromPool(p, func(context.Context) (int, error) { ran = true; return 3, nil }).Observe())
		if len(items) != 1 || items[0].E != pool.ErrClosed || ran {
			t.Fatalf("items %v from a closed pool (fn ran %v), want one pool.ErrClosed item and fn never run", items, ran)
		}
	})
}

// FromPool: "A full pool emits one error item holding the
// *bulkhead.FullError". A task that waited MaxQueueWait in the queue is
// refused by a full pool too, with Reason WaitTimeout: the doc named only
// NoWait and QueueFull (corrected by this audit).
func TestHostileFromPoolQueueWaitThatExpiresEmitsAWaitTimeoutFullError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := soapPool(t, pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: time.Second})
		release := make(chan struct{})
		busy := pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-release; return 0, nil })
		synctest.Wait()
		start := time.Now()
		items := rxtest.Drain(single.FromPool(p, func(context.Context) (int, error) { panic("must not run") }).Observe())
		var fe *bulkhead.FullError
		if len(items) != 1 || !errors.As(items[0].E, &fe) || fe.Reason != bulkhead.WaitTimeout || time.Since(start) != time.Second {
			t.Fatalf("items %v after %v, want one *FullError (WaitTimeout) after MaxQueueWait (1s)", items, time.Since(start))
		}
		close(release)
		<-busy.Done()
	})
}

// FromPool: "The task's context is the observation's (rxgo.WithContext in
// opts or in Observe)". Given to FromPool rather than to Observe, a context
// that ends while the task is queued withdraws it (fn never runs) and the
// observation closes without an item.
func TestHostileFromPoolContextGivenToFromPoolWithdrawsTheQueuedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := soapPool(t, pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout})
		release := make(chan struct{})
		busy := pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-release; return 0, nil })
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		ran := false
		ch := single.FromPool(p, func(context.Context) (int, error) { ran = true; return 1, nil }, rxgo.WithContext(ctx)).Observe()
		synctest.Wait()
		if d := p.Metrics().QueueDepth; d != 1 {
			t.Fatalf("QueueDepth = %d, want the task queued", d)
		}
		cancel()
		if items := rxtest.Drain(ch); len(items) != 0 {
			t.Fatalf("items %v, want none", items)
		}
		synctest.Wait()
		if d := p.Metrics().QueueDepth; d != 0 {
			t.Fatalf("QueueDepth = %d after the context ended, want 0", d)
		}
		close(release)
		<-busy.Done()
		synctest.Wait()
		if ran {
			t.Fatal("the withdrawn task ran")
		}
	})
}
