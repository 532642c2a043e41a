package redis_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// Two replicas in one process, each with goroutines whose callbacks block,
// re-enter (acquire again from inside OnDone, give the permit back from
// inside OnDone) and race Cancel against grants: at most N holders at any
// time, exactly one outcome per acquisition, nothing leaked.
func TestStressCallbacksThatBlockAndReenterNeverOverAdmitOrStrand(t *testing.T) {
	srv := sharedServer(t)
	cfg := fastStore()
	cfg.KeyPrefix = prefixFor(t)
	const permits = 4
	bc := fleetConfig(permits, 20*time.Millisecond)
	bc.MaxQueuedCalls = 32
	sa, c := newStore(t, srv, cfg)
	sb, _ := newStore(t, srv, cfg)
	bhs := []*bulkheadUnderTest{{b: newBulkhead(t, sa, "p", bc)}, {b: newBulkhead(t, sb, "p", bc)}}
	var holders, maxHolders, outcomes, acquisitions atomic.Int64
	enter := func() {
		n := holders.Add(1)
		for m := maxHolders.Load(); n > m && !maxHolders.CompareAndSwap(m, n); m = maxHolders.Load() {
		}
	}
	stop := time.Now().Add(1500 * time.Millisecond)
	var wg sync.WaitGroup
	for g := range 12 {
		bh := bhs[g%2]
		rng := rand.New(rand.NewPCG(7, uint64(g)))
		wg.Go(func() {
			for time.Now().Before(stop) {
				a := bh.b.AcquirePermissionAsync()
				acquisitions.Add(1)
				done := make(chan struct{})
				mode := rng.IntN(3)
				var once atomic.Int32
				a.OnDone(func(err error) {
					if once.Add(1) != 1 {
						t.Error("a callback ran twice")
					}
					outcomes.Add(1)
					defer close(done)
					if err != nil {
						return
					}
					enter()
					switch mode {
					case 0: // block a little on the delivering goroutine
						time.Sleep(200 * time.Microsecond)
						holders.Add(-1)
						bh.b.FinishCall()
					case 1: // give back and acquire again from the callback
						holders.Add(-1)
						bh.b.ReleasePermission()
						again := bh.b.AcquirePermissionAsync()
						acquisitions.Add(1)
						again.OnDone(func(err error) {
							outcomes.Add(1)
							if err == nil {
								enter()
								holders.Add(-1)
								bh.b.FinishCall()
							}
						})
					default: // hand the permit to this goroutine
						go func() {
							holders.Add(-1)
							bh.b.FinishCall()
						}()
					}
				})
				if rng.IntN(3) == 0 {
					a.Cancel()
				}
				select {
				case <-done:
				case <-time.After(outcomeTimeout):
					t.Error("an acquisition got no outcome")
					return
				}
			}
		})
	}
	wg.Wait()
	eventually(t, outcomeTimeout, "every outcome delivered", func() bool { return outcomes.Load() == acquisitions.Load() })
	eventually(t, outcomeTimeout, "every permit given back", func() bool {
		return bhs[0].b.Metrics().InFlightCalls == 0 && bhs[1].b.Metrics().InFlightCalls == 0
	})
	if m := maxHolders.Load(); m > permits {
		t.Errorf("%d holders at once, limit %d", m, permits)
	}
	t.Logf("%d acquisitions, max %d holders", acquisitions.Load(), maxHolders.Load())
	fleetIdle(t, c, cfg.KeyPrefix, "p", outcomeTimeout)
}

type bulkheadUnderTest struct{ b *rxredis.Bulkhead }
