package pool_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
)

// eventWaits records the Wait of a pool's events by type and reason.
type eventWaits struct {
	mu sync.Mutex
	by map[[2]uint8][]time.Duration
}

func recordPoolWaits(t *testing.T, p *pool.Pool) *eventWaits {
	w := &eventWaits{by: map[[2]uint8][]time.Duration{}}
	t.Cleanup(p.OnEvent(func(e bulkhead.Event) {
		w.mu.Lock()
		k := [2]uint8{uint8(e.Type), uint8(e.Reason)}
		w.by[k] = append(w.by[k], e.Wait)
		w.mu.Unlock()
	}))
	return w
}

func (w *eventWaits) of(t bulkhead.EventType, r bulkhead.Reason) []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.by[[2]uint8{uint8(t), uint8(r)}]...)
}

func TestPoolEventWaitIsTheTimeATaskSpentQueued(t *testing.T) {
	for _, maxWait := range []time.Duration{300 * time.Millisecond, bulkhead.NoTimeout} {
		synctest.Test(t, func(t *testing.T) {
			p := newTestPool(t, "waits", pool.Config{MaxWorkers: 1, CoreWorkers: 1, QueueCapacity: 4, KeepAlive: time.Second, MaxQueueWait: maxWait})
			w := recordPoolWaits(t, p)
			first, second := newPoolGate(t), newPoolGate(t)
			f1 := pool.Submit(context.Background(), p, poolTaskWaitingOn(first, 1))
			synctest.Wait()
			f2 := pool.Submit(context.Background(), p, poolTaskWaitingOn(second, 2))
			time.Sleep(100 * time.Millisecond)
			first.open() // f2 starts after 100 ms in the queue
			if _, err := f1.Get(context.Background()); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			f3 := pool.Submit(ctx, p, poolTaskWaitingOn(second, 3))
			if maxWait != bulkhead.NoTimeout {
				time.Sleep(400 * time.Millisecond) // f3 expires at 300 ms
				if _, err := f3.Get(context.Background()); err == nil {
					t.Fatal("f3 did not expire")
				}
				if got := w.of(bulkhead.CallRejected, bulkhead.WaitTimeout); len(got) != 1 || got[0] != 300*time.Millisecond {
					t.Errorf("WaitTimeout waits %v, want [300ms]", got)
				}
			}
			second.open()
			if _, err := f2.Get(context.Background()); err != nil {
				t.Fatal(err)
			}
			if maxWait == bulkhead.NoTimeout {
				if _, err := f3.Get(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			got := w.of(bulkhead.CallPermitted, 0)
			if len(got) < 2 || got[0] != 0 || got[1] != 100*time.Millisecond {
				t.Errorf("max wait %v: CallPermitted waits %v, want [0 100ms ...]", maxWait, got)
			}
		})
	}
}
