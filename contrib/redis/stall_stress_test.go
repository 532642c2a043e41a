package redis_test

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rxbulkhead/bulkhead"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// The state machine of the Store (up, unreachable) under a storm of
// SIGSTOP/SIGCONT while goroutines acquire, cancel, give back through both
// styles (FinishCall and Permit.Finish) and re-enter from callbacks: every
// acquisition gets exactly one outcome, each error is ErrUnavailable or a
// *FullError, at most the limit is held in this process, and once Redis
// stays up nothing is left held or queued, in the process or in Redis.
func TestPauseResumeStormKeepsOneOutcomePerCallAndLeaksNothing(t *testing.T) {
	srv := withServer(t)
	c := srv.client(t, func(o *goredis.Options) { o.ReadTimeout, o.WriteTimeout = 3*time.Second, 3*time.Second })
	cfg := fastStore()
	cfg.KeyPrefix = prefixFor(t)
	cfg.Timeout = 100 * time.Millisecond
	flushKeys(t, c, cfg.KeyPrefix)
	s, err := rxredis.NewStore(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const permits = 3
	b := newBulkhead(t, s, "p", fleetConfig(permits, 50*time.Millisecond))
	o := newOutcomes()
	var mu sync.Mutex
	var all []*bulkhead.Acquisition
	record := func(a *bulkhead.Acquisition) *bulkhead.Acquisition {
		o.watch(a)
		mu.Lock()
		all = append(all, a)
		mu.Unlock()
		return a
	}
	var holders, maxHolders, badErrs, grantedFirst atomic.Int64
	stop := time.Now().Add(2 * time.Second)
	storm := make(chan struct{})
	go func() {
		defer close(storm)
		rng := rand.New(rand.NewPCG(3, 4))
		for time.Now().Before(stop) {
			srv.Pause()
			time.Sleep(time.Duration(50+rng.IntN(200)) * time.Millisecond)
			srv.Resume()
			time.Sleep(time.Duration(50+rng.IntN(200)) * time.Millisecond)
		}
		srv.Resume()
	}()
	var wg sync.WaitGroup
	for g := range 8 {
		rng := rand.New(rand.NewPCG(9, uint64(g)))
		wg.Go(func() {
			for time.Now().Before(stop) {
				var typed *rxredis.Permit
				var a *bulkhead.Acquisition
				if rng.IntN(3) == 0 {
					typed = b.Acquire()
					a = record(typed.Acquisition())
				} else {
					a = record(b.AcquirePermissionAsync())
				}
				if rng.IntN(5) == 0 {
					// Re-enter from the callback: acquire and cancel at once.
					// A grant can come first (Cancel false): its permit is
					// ours to give back, or it stays held after the storm.
					a.OnDone(func(error) {
						r := record(b.AcquirePermissionAsync())
						if !r.Cancel() {
							r.OnDone(func(err error) {
								if err == nil {
									grantedFirst.Add(1)
									b.FinishCall()
								}
							})
						}
					})
				}
				if rng.IntN(4) == 0 && a.Cancel() {
					continue
				}
				select {
				case <-a.Done():
				case <-time.After(outcomeTimeout):
					t.Error("no outcome within the bound")
					return
				}
				if err := a.Err(); err != nil {
					var fe *bulkhead.FullError
					if !errors.Is(err, rxredis.ErrUnavailable) && !errors.As(err, &fe) && !errors.Is(err, bulkhead.ErrCancelled) {
						badErrs.Add(1)
						t.Errorf("unexpected error: %v", err)
					}
					continue
				}
				n := holders.Add(1)
				for m := maxHolders.Load(); n > m && !maxHolders.CompareAndSwap(m, n); m = maxHolders.Load() {
				}
				time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
				holders.Add(-1)
				if typed != nil {
					typed.Finish()
				} else {
					b.FinishCall()
				}
			}
		})
	}
	wg.Wait()
	<-storm
	mu.Lock()
	as := append([]*bulkhead.Acquisition(nil), all...)
	mu.Unlock()
	o.check(t, as)
	if maxHolders.Load() > permits {
		t.Errorf("%d holders in one process, limit %d", maxHolders.Load(), permits)
	}
	t.Logf("%d acquisitions through the storm, max %d holders, %d re-entrant acquisitions granted before their Cancel", len(as), maxHolders.Load(), grantedFirst.Load())
	eventually(t, outcomeTimeout, "store up after the storm", s.Available)
	var last bulkhead.Metrics
	defer func() {
		if t.Failed() {
			t.Logf("the bulkhead's last metrics: %+v", last)
		}
	}()
	eventually(t, outcomeTimeout, "nothing held or queued in the process", func() bool {
		last = b.Metrics()
		return last.InFlightCalls == 0 && last.QueuedCalls == 0
	})
	fleetIdle(t, c, cfg.KeyPrefix, "p", outcomeTimeout)
}
