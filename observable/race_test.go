package observable_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reactivex/rxgo/v2"
	"github.com/stretchr/testify/assert"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
	"github.com/rxbulkhead/bulkhead/observable"
)

// Many subscribers, some cancelling while pending, some while running, some
// draining, some timing out, through a 2-permit bulkhead: all permits come
// back and the limit is never exceeded.
func TestHammerManySubscribersKeepTheLimitAndReturnEveryPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem, _ := rxtest.Partner(t, 2, 50*time.Millisecond)
		b := &counting{Bulkhead: sem}
		var peak atomic.Int64
		src := rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
			// Sources observed minus permits given back: the sources
			// running under a permit. The release is counted before the
			// Semaphore can grant the permit to the next subscription.
			active := b.started.Add(1) - b.released.Load()
			for p := peak.Load(); active > p && !peak.CompareAndSwap(p, active); p = peak.Load() {
			}
			for i := range 3 {
				select {
				case <-time.After(time.Millisecond):
				case <-ctx.Done():
					return
				}
				if !rxgo.Of(i).SendContext(ctx, next) {
					return
				}
			}
		}})
		obs := observable.Bulkhead(b, src)
		var wg sync.WaitGroup
		for i := range 400 {
			r := rand.New(rand.NewPCG(uint64(i), 1))
			wg.Go(func() {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				ch := obs.Observe(rxgo.WithContext(ctx))
				switch r.IntN(3) {
				case 0: // cancel after a random virtual delay
					time.AfterFunc(time.Duration(r.IntN(5000))*time.Microsecond, cancel)
					rxtest.Drain(ch)
				case 1: // take one item then walk away properly
					<-ch
					cancel()
					rxtest.Drain(ch)
				default:
					rxtest.Drain(ch)
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		assert.LessOrEqual(t, peak.Load(), int64(2))
		assert.Positive(t, peak.Load())
		assert.Equal(t, b.started.Load(), b.released.Load())
	})
}

// counting is a Bulkhead that counts the permits given back, before giving
// them back.
type counting struct {
	bulkhead.Bulkhead
	started, released atomic.Int64
}

func (c *counting) ReleasePermission() { c.released.Add(1); c.Bulkhead.ReleasePermission() }
func (c *counting) FinishCall()        { c.released.Add(1); c.Bulkhead.FinishCall() }
