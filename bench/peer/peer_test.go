package peer_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rxbulkhead/bulkhead/bench/peer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// defaultTestTimeout bounds waits that only time out when a test fails.
const defaultTestTimeout = 10 * time.Second

func closeIfPool(p peer.Peer) {
	if c, ok := p.(interface{ Close() }); ok {
		c.Close()
	}
}

// Every peer must honour the same contract; the benchmarks rely on it.
func TestPeersGrantUpToTheirPermitsAndQueueTheRest(t *testing.T) {
	for _, f := range peer.All() {
		t.Run(f.Name, func(t *testing.T) {
			p := f.New(2)
			defer closeIfPool(p)
			if p.Name() != f.Name {
				t.Errorf("Name() = %q; want %q", p.Name(), f.Name)
			}
			for i := range 2 {
				if !p.TryAcquire() {
					t.Fatalf("TryAcquire #%d failed with a free permit", i+1)
				}
			}
			if p.TryAcquire() {
				t.Fatal("TryAcquire succeeded with every permit taken")
			}
			granted := make(chan error, 1)
			p.AcquireAsync(context.Background(), func(err error) { granted <- err })
			select {
			case err := <-granted:
				t.Fatalf("AcquireAsync completed (%v) while the bulkhead was full", err)
			default:
			}
			p.Release()
			select {
			case err := <-granted:
				if err != nil {
					t.Fatalf("AcquireAsync got %v; want a permit", err)
				}
			case <-time.After(defaultTestTimeout):
				t.Fatal("AcquireAsync was not granted after a Release")
			}
			p.Release()
			p.Release()
		})
	}
}

func TestPeersAcquireReturnsCtxErrWhenCtxEnds(t *testing.T) {
	for _, f := range peer.All() {
		t.Run(f.Name, func(t *testing.T) {
			p := f.New(1)
			defer closeIfPool(p)
			if err := p.Acquire(context.Background()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Acquire(ctx) }()
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Acquire = %v; want context.Canceled", err)
				}
			case <-time.After(defaultTestTimeout):
				t.Fatal("Acquire did not return after its ctx was cancelled")
			}
			p.Release()
			// The permit came back and nothing is left waiting for it.
			if err := p.Acquire(context.Background()); err != nil {
				t.Fatal(err)
			}
			p.Release()
		})
	}
}

// A hammer: goroutines take permits every way, some with cancelled
// contexts, and never hold more than the limit; at the end every permit is
// free again.
func TestPeersHammerNeverExceedsPermits(t *testing.T) {
	const permits, workers, rounds = 3, 8, 300
	for _, f := range peer.All() {
		t.Run(f.Name, func(t *testing.T) {
			p := f.New(permits)
			defer closeIfPool(p)
			var held, peak atomic.Int64
			enter := func() {
				if n := held.Add(1); n > permits {
					t.Errorf("%d permits held; limit %d", n, permits)
				} else {
					for {
						old := peak.Load()
						if n <= old || peak.CompareAndSwap(old, n) {
							break
						}
					}
				}
			}
			leave := func() { held.Add(-1); p.Release() }
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 1))
					for range rounds {
						switch rng.IntN(3) {
						case 0:
							if p.TryAcquire() {
								enter()
								leave()
							}
						case 1:
							ctx, cancel := context.WithCancel(context.Background())
							if rng.IntN(2) == 0 {
								cancel()
							}
							if p.Acquire(ctx) == nil {
								enter()
								leave()
							}
							cancel()
						case 2:
							done := make(chan struct{})
							p.AcquireAsync(context.Background(), func(err error) {
								if err == nil {
									enter()
									leave()
								}
								close(done)
							})
							<-done
						}
					}
				})
			}
			wg.Wait()
			for i := range permits {
				ctx, cancel := context.WithTimeout(context.Background(), defaultTestTimeout)
				err := p.Acquire(ctx)
				cancel()
				if err != nil {
					t.Fatalf("permit %d did not come back: %v", i+1, err)
				}
			}
			for range permits {
				p.Release()
			}
			if peak.Load() == 0 {
				t.Error("no permit was ever held")
			}
		})
	}
}
