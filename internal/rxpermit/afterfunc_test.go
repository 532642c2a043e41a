package rxpermit_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reactivex/rxgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead/internal/rxpermit"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
)

// watchedCtx is a context that never ends by itself and counts the
// callbacks registered on it (context.AfterFunc and context.WithCancel use
// its AfterFunc method) that have not been stopped.
type watchedCtx struct {
	context.Context
	done  chan struct{} // never closed
	mu    sync.Mutex
	live  int
	funcs map[int]func()
	next  int
}

func newWatchedCtx() *watchedCtx {
	return &watchedCtx{Context: context.Background(), done: make(chan struct{}), funcs: map[int]func(){}}
}

func (c *watchedCtx) Done() <-chan struct{} { return c.done } // non-nil: it could end

func (c *watchedCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next++
	c.funcs[id] = f
	c.live++
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.funcs[id]; !ok {
			return false
		}
		delete(c.funcs, id)
		c.live--
		return true
	}
}

func (c *watchedCtx) registered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}

// An observation given a long-lived context must not stay registered on it
// once it ends, or every observation would leak a record until the context
// ends (a server-wide context may never end).
func TestAnEndedObservationLeavesNothingRegisteredOnTheConsumersContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, time.Hour)
		ctx := newWatchedCtx()
		src := (&rxtest.Probe{Items: []any{1, 2}}).Observable()
		obs := rxpermit.Observable(b, src)
		for range 3 {
			assert.Equal(t, []any{1, 2}, rxtest.Values(rxtest.Drain(obs.Observe(rxgo.WithContext(ctx)))))
		}
		<-obs.Run(rxgo.WithContext(ctx))
		_, err := rxpermit.Single(b, src).Get(rxgo.WithContext(ctx))
		require.NoError(t, err)

		// Granted after a wait.
		require.True(t, b.TryAcquirePermission())
		ch := obs.Observe(rxgo.WithContext(ctx))
		synctest.Wait()
		require.Equal(t, 1, b.Metrics().QueuedCalls)
		assert.Equal(t, 1, ctx.registered(), "a pending observation watches its context")
		b.ReleasePermission()
		rxtest.Drain(ch)

		synctest.Wait()
		assert.Zero(t, ctx.registered(), "callbacks left registered on the consumer's context")
	})
}
