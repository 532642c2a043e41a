package pool_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
)

// TestStressKeyedSubmitsRaceEviction races SubmitKeyed on a few keys (tasks
// that sleep on virtual time, panic, or submit again) against the idle
// sweep: no key ever runs more tasks than its pool's workers (counted by
// the task), no task lands on a closed pool (ErrClosed), and every Future
// is done.
func TestStressKeyedSubmitsRaceEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, keys, submitters, iterations = 2, 5, 6, 200
		r := newKeyedPoolRegistry(t, pool.Config{MaxWorkers: workers, QueueCapacity: 1000, MaxQueueWait: bulkhead.NoTimeout}, pool.WithIdleTimeout(10*time.Millisecond))
		var running [keys]atomic.Int64
		var over, closed atomic.Int64
		var wg sync.WaitGroup
		submit := func(k int, rng *rand.Rand) {
			what := rng.IntN(6)
			f := pool.SubmitKeyed(context.Background(), r, fmt.Sprint("k", k), pool.CallOptions{}, func(context.Context) (int, error) {
				if running[k].Add(1) > workers {
					over.Add(1)
				}
				defer running[k].Add(-1)
				time.Sleep(time.Duration(rng.IntN(3)) * 5 * time.Millisecond)
				if what == 0 {
					panic("boom")
				}
				return 0, nil
			})
			_, err := f.Get(context.Background())
			if err == pool.ErrClosed {
				closed.Add(1)
			}
		}
		for s := range submitters {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(s), 3))
				for range iterations {
					submit(rng.IntN(keys), rand.New(rand.NewPCG(rng.Uint64(), 1)))
					time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
				}
			})
		}
		wg.Wait()
		assert.Zero(t, over.Load(), "a key ran more tasks than its workers")
		assert.Zero(t, closed.Load(), "a keyed task was sent to an evicted, closed pool")
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, 0, r.Stats().Pools)
		assert.NotZero(t, r.Stats().Evictions)
	})
}
