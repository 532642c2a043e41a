package rxpermit_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/reactivex/rxgo/v2"

	"github.com/rxbulkhead/bulkhead/internal/rxpermit"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
)

// TestHammerEveryEntryPointUnderContention runs observations of every
// entry point (Observe with and without options, Run, Get, a chained Map)
// from several goroutines on a 2-permit bulkhead, cancelling a random part
// of them at a random moment, including from inside the source's producer
// (a callback that re-enters the observation's own context). Every
// observation must end and every permit come back (Partner's leak check
// runs at cleanup; goleak checks the goroutines).
func TestHammerEveryEntryPointUnderContention(t *testing.T) {
	b, _ := rxtest.Partner(t, 2, time.Hour)
	id := func(_ context.Context, v any) (any, error) { return v, nil }
	const workers, rounds = 6, 300
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range rounds {
				ctx, cancel := context.WithCancel(t.Context())
				src := rxgo.Defer([]rxgo.Producer{func(pctx context.Context, next chan<- rxgo.Item) {
					for i := range 3 {
						if rand.IntN(8) == 0 { // the global source: producers run on their own goroutines
							cancel() // the consumer goes away while the source runs
						}
						if !rxgo.Of(i).SendContext(pctx, next) {
							return
						}
					}
				}})
				if r.IntN(4) == 0 {
					go cancel()
				}
				switch r.IntN(5) {
				case 0:
					rxtest.Drain(rxpermit.Observable(b, src).Observe())
				case 1:
					rxtest.Drain(rxpermit.Observable(b, src).Observe(rxgo.WithContext(ctx)))
				case 2:
					<-rxpermit.Observable(b, src).Run(rxgo.WithContext(ctx))
				case 3:
					_, _ = rxpermit.Single(b, src).Get(rxgo.WithContext(ctx))
				case 4:
					rxtest.Drain(rxpermit.Observable(b, src).Map(id).Observe(rxgo.WithContext(ctx)))
				}
				cancel()
			}
		})
	}
	wg.Wait()
	// A chained observation's channel can close before its upstream
	// withdrew (rxgo's Map does not wait): let those land.
	for deadline := time.Now().Add(10 * time.Second); b.Metrics().InFlightCalls+b.Metrics().QueuedCalls != 0 && time.Now().Before(deadline); {
		runtime.Gosched()
	}
}

// observeFunc is a source whose Observe is f: it panics, blocks, or
// re-enters a bulkhead observation on the caller's goroutine.
type observeFunc struct {
	rxgo.Observable
	f func(opts ...rxgo.Option) <-chan rxgo.Item
}

func (o observeFunc) Observe(opts ...rxgo.Option) <-chan rxgo.Item { return o.f(opts...) }

// TestHammerSourcesWhoseObservePanicsBlocksOrReenters observes, from
// several goroutines, sources whose Observe (run on the caller's goroutine
// when the permit is free, on the granting one's otherwise) panics, blocks
// for a while, or observes another bulkhead observation of the same
// semaphore and returns its channel, with and without options and through
// a chained Map, cancelling a random part. Every panic must reach the
// caller of Observe with the permit back; every observation must end and
// every permit come back (Partner's leak check at cleanup).
func TestHammerSourcesWhoseObservePanicsBlocksOrReenters(t *testing.T) {
	b, _ := rxtest.Partner(t, 4, 0) // no wait: a re-entering source is rejected, never waits on itself
	id := func(_ context.Context, v any) (any, error) { return v, nil }
	const workers, rounds = 6, 300
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 2))
			for range rounds {
				ctx, cancel := context.WithCancel(t.Context())
				var src rxgo.Observable
				switch r.IntN(3) {
				case 0:
					src = observeFunc{rxgo.Empty(), func(...rxgo.Option) <-chan rxgo.Item { panic("boom") }}
				case 1:
					src = observeFunc{rxgo.Empty(), func(opts ...rxgo.Option) <-chan rxgo.Item {
						for range 50 {
							runtime.Gosched() // an Observe that takes a while
						}
						return rxgo.Just(1, 2)().Observe(opts...)
					}}
				default:
					src = observeFunc{rxgo.Empty(), func(opts ...rxgo.Option) <-chan rxgo.Item {
						return rxpermit.Observable(b, rxgo.Just(1)()).Observe(opts...) // re-enters the semaphore
					}}
				}
				if r.IntN(4) == 0 {
					go cancel()
				}
				func() {
					defer func() {
						if p := recover(); p != nil && p != "boom" {
							panic(p)
						}
					}()
					switch r.IntN(3) {
					case 0:
						rxtest.Drain(rxpermit.Observable(b, src).Observe())
					case 1:
						rxtest.Drain(rxpermit.Observable(b, src).Observe(rxgo.WithContext(ctx)))
					default:
						rxtest.Drain(rxpermit.Observable(b, src).Map(id).Observe(rxgo.WithContext(ctx)))
					}
				}()
				cancel()
			}
		})
	}
	wg.Wait()
	for deadline := time.Now().Add(10 * time.Second); b.Metrics().InFlightCalls+b.Metrics().QueuedCalls != 0 && time.Now().Before(deadline); {
		runtime.Gosched()
	}
}
