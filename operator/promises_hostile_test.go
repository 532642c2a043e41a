package operator_test

// Hostile readings of the package's doc promises: the permit rules the
// package doc states for "all five" types, tried on each of them through
// Apply, with the only permit held by someone else.

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
	"github.com/rxbulkhead/bulkhead/operator"
)

// hostileKind is one of the five source types, with a source that counts
// its subscriptions and a way to subscribe to what Apply returns: sub
// subscribes and returns a func that cancels the subscription (nil error:
// still running) and the error the subscription ended with, if any.
type hostileKind struct {
	name string
	// source returns a fresh source of the kind and the counter of its
	// subscriptions.
	source func() (any, *atomic.Int32)
	// subscribe subscribes to wrapped and returns cancel, and result, which
	// waits for the end of the subscription and returns its error (nil
	// for a value, a completion or a subscription cancelled).
	subscribe func(wrapped any) (cancel func(), result func() error)
}

func hostileKinds() []hostileKind {
	rx := func(probe func(*rxtest.Probe) any) func() (any, *atomic.Int32) {
		return func() (any, *atomic.Int32) {
			p := &rxtest.Probe{Items: []any{1}}
			return probe(p), &p.Observed
		}
	}
	observe := func(wrapped any) (func(), func() error) {
		ctx, cancel := context.WithCancel(context.Background())
		ch := wrapped.(rxgo.Iterable).Observe(rxgo.WithContext(ctx))
		return cancel, func() error {
			defer cancel()
			for it := range ch {
				if it.E != nil {
					return it.E
				}
			}
			return nil
		}
	}
	return []hostileKind{
		{"rxgo.Observable", rx(func(p *rxtest.Probe) any { return p.Observable() }), observe},
		{"rxgo.Single", rx(func(p *rxtest.Probe) any { return p.Single() }), observe},
		{"rxgo.OptionalSingle", rx(func(p *rxtest.Probe) any { return p.OptionalSingle() }), observe},
		{"completable.Completable", func() (any, *atomic.Int32) {
			var n atomic.Int32
			return completable.FromFunc(func(context.Context) error { n.Add(1); return nil }), &n
		}, func(wrapped any) (func(), func() error) {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- completable.Await(ctx, wrapped.(completable.Completable)) }()
			return cancel, func() error {
				defer cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					return err
				}
				return nil
			}
		}},
		{"flowable.Publisher[any]", func() (any, *atomic.Int32) {
			var n atomic.Int32
			return flowable.Defer(func() flowable.Publisher[any] { n.Add(1); return flowable.Just[any](1) }), &n
		}, func(wrapped any) (func(), func() error) {
			subs := make(chan flowable.Subscription, 1)
			done := make(chan error, 1)
			wrapped.(flowable.Publisher[any]).Subscribe(flowable.Funcs[any]{
				Start:    func(s flowable.Subscription) { subs <- s; s.Request(1) },
				Error:    func(err error) { done <- err },
				Complete: func() { done <- nil },
			})
			sub := <-subs
			return sub.Cancel, func() error {
				select {
				case err := <-done:
					return err
				default:
					return nil // cancelled: no terminal signal (rule 1.8)
				}
			}
		}},
	}
}

// Package doc, for all five: "a rejection is signalled as an error matching
// bulkhead.ErrBulkheadFull and the source is never subscribed".
func TestHostileEveryKindRejectsOnAFullBulkheadWithoutSubscribingTheSource(t *testing.T) {
	for _, k := range hostileKinds() {
		t.Run(k.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, ev := newBulkhead(t, noWait)
				if !b.TryAcquirePermission() {
					t.Fatal("could not take the only permit")
				}
				defer b.ReleasePermission()
				src, subscribed := k.source()
				wrapped, err := operator.Of(b).Apply(src)
				if err != nil {
					t.Fatal(err)
				}
				_, result := k.subscribe(wrapped)
				if err := result(); !errors.Is(err, bulkhead.ErrBulkheadFull) {
					t.Fatalf("subscription on a full bulkhead ended with %v, want ErrBulkheadFull", err)
				}
				synctest.Wait()
				if n := subscribed.Load(); n != 0 {
					t.Fatalf("the source was subscribed %d times by a rejected call", n)
				}
				if got, want := ev.Types(), []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallRejected}; !slices.Equal(got, want) {
					t.Fatalf("events %v, want %v", got, want)
				}
			})
		})
	}
}

// Package doc, for all five: "subscribing never blocks ... cancelling while
// the permit is pending withdraws the request", and "the permit is
// requested when the source is subscribed (observed), never when the
// pipeline is built". With the only permit held, each kind's subscription
// returns at once and queues; cancelling it leaves nothing queued, and the
// release afterwards subscribes nothing.
func TestHostileEveryKindWithdrawsWhenCancelledWhilePending(t *testing.T) {
	for _, k := range hostileKinds() {
		t.Run(k.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, ev := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1})
				if !b.TryAcquirePermission() {
					t.Fatal("could not take the only permit")
				}
				src, subscribed := k.source()
				wrapped, err := operator.Of(b).Apply(src)
				if err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if q := b.Metrics().QueuedCalls; q != 0 {
					t.Fatalf("building the pipeline queued %d calls", q)
				}
				cancel, result := k.subscribe(wrapped)
				synctest.Wait()
				if q := b.Metrics().QueuedCalls; q != 1 {
					t.Fatalf("QueuedCalls = %d after subscribing, want 1", q)
				}
				cancel()
				if err := result(); err != nil {
					t.Fatalf("a subscription cancelled while pending ended with %v, want nothing", err)
				}
				synctest.Wait()
				if q := b.Metrics().QueuedCalls; q != 0 {
					t.Fatalf("QueuedCalls = %d after the cancel, want 0", q)
				}
				b.ReleasePermission()
				synctest.Wait()
				if n := subscribed.Load(); n != 0 || b.Metrics().InFlightCalls != 0 {
					t.Fatalf("after the release: source subscribed %d times, %d permits held; want 0 and 0", n, b.Metrics().InFlightCalls)
				}
				if got, want := ev.Types(), []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallCancelled}; !slices.Equal(got, want) {
					t.Fatalf("events %v, want %v (the holder's permit, the withdrawal)", got, want)
				}
			})
		})
	}
}
