package rxtest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reactivex/rxgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
)

func TestProbeEmitsItsItemsAsValuesAndErrorsAndCountsObservations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		p := &rxtest.Probe{Items: []any{1, boom, "x"}}
		for range 2 {
			items := rxtest.Drain(p.Observable().Observe())
			require.Len(t, items, 3)
			assert.Equal(t, []any{1, boom, "x"}, rxtest.Values(items))
			assert.True(t, items[1].Error())
		}
		assert.Equal(t, int32(2), p.Observed.Load())
	})
}

func TestProbeWithHoldStaysOpenUntilItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		ch := (&rxtest.Probe{Hold: true}).Observable().Observe(rxgo.WithContext(ctx))
		synctest.Wait()
		select {
		case it, ok := <-ch:
			t.Fatalf("a held probe signalled %v (open %v)", it, ok)
		default:
		}
		cancel()
		assert.Empty(t, rxtest.Drain(ch))
	})
}

func TestColdSinglesObserveAfreshAndImplementOnlyObserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &rxtest.Probe{Items: []any{7}}
		s, o := p.Single(), p.OptionalSingle()
		for _, src := range []rxgo.Iterable{s, s, o, o} {
			assert.Equal(t, []any{7}, rxtest.Values(rxtest.Drain(src.Observe())))
		}
		assert.Equal(t, int32(4), p.Observed.Load())
		assert.Panics(t, func() { s.Get() })
		assert.Panics(t, func() { o.Run() })
	})
}

func TestPartnerLogsEventsAndChecksPermitsAtCleanup(t *testing.T) {
	user := &fakeTB{TB: t}
	b, ev := rxtest.Partner(user, 1, 0)
	assert.Equal(t, "partner", b.Name())
	require.True(t, b.TryAcquirePermission())
	assert.False(t, b.TryAcquirePermission())
	user.cleanup() // the permit is still held: the leak check reports it
	require.Len(t, user.errs, 1)
	assert.Contains(t, user.errs[0], "1 permit(s) held")
	assert.Equal(t, []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallRejected}, ev.Types())
	b.ReleasePermission()
}

func TestGrantRacingCancelFailsForAnOperatorThatLeaksThePermit(t *testing.T) {
	b, err := bulkhead.New("leaky", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	require.NoError(t, err)
	// leaky queues for a permit on every Observe and never gives it back
	// nor withdraws the request.
	leaky := iterableFunc(func(...rxgo.Option) <-chan rxgo.Item {
		b.AcquirePermissionAsync()
		ch := make(chan rxgo.Item)
		close(ch)
		return ch
	})
	user := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() { // Fatalf ends this goroutine, as it ends a test's
		defer close(done)
		rxtest.GrantRacingCancel(user, b, leaky, 1, 10)
	}()
	<-done
	require.Len(t, user.errs, 1)
	assert.Contains(t, user.errs[0], "iteration 0: 1 permit(s) held")
	b.ReleasePermission()
}

type iterableFunc func(opts ...rxgo.Option) <-chan rxgo.Item

func (f iterableFunc) Observe(opts ...rxgo.Option) <-chan rxgo.Item { return f(opts...) }

// fakeTB records what a fixture reports and the cleanups it registers, so
// that the fixtures' own failures can be tested.
type fakeTB struct {
	testing.TB
	cleanups []func()
	errs     []string
}

func (f *fakeTB) Helper()                   {}
func (f *fakeTB) Cleanup(c func())          { f.cleanups = append(f.cleanups, c) }
func (f *fakeTB) Errorf(s string, a ...any) { f.errs = append(f.errs, fmt.Sprintf(s, a...)) }
func (f *fakeTB) Fatalf(s string, a ...any) { f.Errorf(s, a...); runtime.Goexit() }

func (f *fakeTB) cleanup() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}
