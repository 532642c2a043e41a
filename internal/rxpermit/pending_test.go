package rxpermit_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reactivex/rxgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
)

// goroutinesWhilePending observes start n times on a full bulkhead and
// returns how many goroutines the pending observations hold once the
// bubble is idle; then it cancels them and checks that all were withdrawn.
func goroutinesWhilePending(t *testing.T, n int, start func(b bulkhead.Bulkhead, ctx context.Context) func()) int {
	t.Helper()
	b, _ := rxtest.Partner(t, 1, time.Hour)
	require.True(t, b.TryAcquirePermission())
	defer b.ReleasePermission()
	ctx, cancel := context.WithCancel(t.Context())
	synctest.Wait()
	before := pipelineGoroutines()
	waits := make([]func(), n)
	for i := range waits {
		waits[i] = start(b, ctx)
	}
	synctest.Wait()
	held := pipelineGoroutines() - before
	require.Equal(t, n, b.Metrics().QueuedCalls)
	cancel()
	for _, w := range waits {
		w()
	}
	synctest.Wait()
	assert.Zero(t, b.Metrics().QueuedCalls, "a cancelled observation is still queued")
	return held
}

// pipelineGoroutines counts the goroutines of the caller's synctest bubble
// that run rxgo's or this package's code (a process-wide count would
// include other tests' goroutines that are still exiting).
func pipelineGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if !strings.Contains(header, "synctest bubble") {
			continue
		}
		if strings.Contains(g, "github.com/reactivex/rxgo/") || strings.Contains(g, "internal/rxpermit.(") {
			n++
		}
	}
	return n
}

func drainOf(ch <-chan rxgo.Item) func() { return func() { rxtest.Drain(ch) } }

func TestAPendingObservationParksNoGoroutine(t *testing.T) {
	src := func() rxgo.Observable { return (&rxtest.Probe{Items: []any{1}}).Observable() }
	for _, tc := range []struct {
		name  string
		start func(b bulkhead.Bulkhead, ctx context.Context) func()
	}{
		{"Observable.Observe", func(b bulkhead.Bulkhead, ctx context.Context) func() {
			return drainOf(rxpermit.Observable(b, src()).Observe(rxgo.WithContext(ctx)))
		}},
		{"Observable.Observe with the operator's options", func(b bulkhead.Bulkhead, ctx context.Context) func() {
			return drainOf(rxpermit.Observable(b, src(), rxgo.WithContext(ctx), rxgo.WithBufferedChannel(1)).Observe())
		}},
		{"Observable.Run", func(b bulkhead.Bulkhead, ctx context.Context) func() {
			d := rxpermit.Observable(b, src()).Run(rxgo.WithContext(ctx))
			return func() { <-d }
		}},
		{"Single.Observe", func(b bulkhead.Bulkhead, ctx context.Context) func() {
			return drainOf(rxpermit.Single(b, src()).Observe(rxgo.WithContext(ctx)))
		}},
		{"Single.Run", func(b bulkhead.Bulkhead, ctx context.Context) func() {
			d := rxpermit.Single(b, src()).Run(rxgo.WithContext(ctx))
			return func() { <-d }
		}},
		{"OptionalSingle.Observe", func(b bulkhead.Bulkhead, ctx context.Context) func() {
			return drainOf(rxpermit.OptionalSingle(b, src()).Observe(rxgo.WithContext(ctx)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				assert.Zero(t, goroutinesWhilePending(t, 10, tc.start))
			})
		})
	}
}

// A chained rxgo operator observes our observation (the Iterable of the
// ObservableImpl it was called on): a pending observation parks nothing of
// ours, and holds only the operator's own goroutine, which rxgo starts for
// every Map whether or not a bulkhead is involved.
func TestAPendingChainedObservationHoldsOnlyTheOperatorsOwnGoroutine(t *testing.T) {
	id := func(_ context.Context, v any) (any, error) { return v, nil }
	synctest.Test(t, func(t *testing.T) {
		held := goroutinesWhilePending(t, 10, func(b bulkhead.Bulkhead, ctx context.Context) func() {
			return drainOf(rxpermit.Observable(b, (&rxtest.Probe{Items: []any{1}}).Observable()).Map(id).Observe(rxgo.WithContext(ctx)))
		})
		assert.Equal(t, 10, held)
	})
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		before := pipelineGoroutines()
		ch := rxgo.Never().Map(id).Observe(rxgo.WithContext(ctx))
		synctest.Wait()
		assert.Equal(t, 1, pipelineGoroutines()-before, "bare rxgo: Map's own goroutine")
		cancel()
		rxtest.Drain(ch)
	})
}
