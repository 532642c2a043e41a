package ro_test

import (
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/samber/ro"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bro "github.com/rxbulkhead/bulkhead/contrib/ro"
)

// goroutineID parses the running goroutine's id from its stack header.
func goroutineID() int {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	f := strings.Fields(string(buf[:n])) // "goroutine 123 [running]: ..."
	id, _ := strconv.Atoi(f[1])
	return id
}

// The package documentation's claim, pinned: a chain of queued
// subscriptions whose sources are synchronous is granted in FIFO order,
// nested on the goroutine that gave the permit back (its stack grows per
// grant), at most 32 inline deliveries deep (plus the first one of a fresh
// goroutine), and continued on fresh goroutines past that bound, where
// nesting resumes once fewer deliveries are in progress.
func TestQueuedSynchronousSourcesNestUpToTheSemaphoresInlineBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const chain = 200
		b, _ := partner(t, 1, time.Hour)
		require.True(t, b.TryAcquirePermission())
		type run struct{ i, goroutine, depth int }
		var mu sync.Mutex
		var runs []run
		for i := range chain {
			src := ro.NewObservable(func(dst ro.Observer[int]) ro.Teardown {
				pcs := make([]uintptr, 4096)
				r := run{i: i, goroutine: goroutineID(), depth: runtime.Callers(0, pcs)}
				mu.Lock()
				runs = append(runs, r)
				mu.Unlock()
				dst.Next(i)
				dst.Complete()
				return nil
			})
			bro.Bulkhead(b, src).Subscribe(ro.NoopObserver[int]())
		}
		require.Equal(t, chain, b.Metrics().QueuedCalls)
		me := goroutineID()
		b.FinishCall() // grants the chain
		synctest.Wait()
		require.Len(t, runs, chain)

		perGoroutine := map[int]int{}
		for k, r := range runs {
			assert.Equal(t, k, r.i, "grants out of FIFO order")
			perGoroutine[r.goroutine]++
		}
		assert.Equal(t, runs[0].goroutine, me, "the first grant runs on the goroutine that gave the permit back")
		assert.Equal(t, runs[1].goroutine, me, "the second grant nests on the same goroutine")
		assert.Greater(t, runs[1].depth, runs[0].depth, "the nested grant runs deeper on the stack")
		for g, n := range perGoroutine {
			assert.LessOrEqual(t, n, 33, "goroutine %d ran %d nested grants; the bound is 32 inline (+1 on a fresh goroutine)", g, n)
		}
		assert.GreaterOrEqual(t, len(perGoroutine), chain/33+1, "past the bound, grants go on on fresh goroutines")
		t.Logf("%d goroutines ran the chain: %v; depth of the first grant %d, of the second %d", len(perGoroutine), perGoroutine, runs[0].depth, runs[1].depth)
		deepest := 0
		for _, r := range runs {
			deepest = max(deepest, r.depth)
		}
		perLevel := runs[1].depth - runs[0].depth
		assert.LessOrEqual(t, deepest, runs[0].depth+32*perLevel, "the stack grows past 32 nested grants")
	})
}
