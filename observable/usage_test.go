package observable_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reactivex/rxgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
	"github.com/rxbulkhead/bulkhead/observable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Two observations of a 1-permit bulkhead: the first holds the permit while
// it waits for its consumer; reading the second one first would wait for
// ever. The documented remedies: cancel the observation you do not read,
// bound the wait with MaxWaitDuration, or drain both concurrently.
func TestTwoObservationsDrainedInTheWrongOrder(t *testing.T) {
	setup := func(t *testing.T, wait time.Duration) (b *bulkhead.Semaphore, first, second <-chan rxgo.Item, cancelFirst context.CancelFunc) {
		b, _ = rxtest.Partner(t, 1, wait)
		obs := observable.Bulkhead(b, rxgo.Just(1)())
		ctx, cancel := context.WithCancel(t.Context())
		first = obs.Observe(rxgo.WithContext(ctx))
		synctest.Wait() // first holds the permit, blocked on its send
		second = obs.Observe()
		synctest.Wait() // second waits for the permit
		require.Equal(t, 1, b.Metrics().InFlightCalls)
		require.Equal(t, 1, b.Metrics().QueuedCalls)
		return b, first, second, cancel
	}

	t.Run("cancel the one you do not read", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			_, first, second, cancelFirst := setup(t, time.Hour)
			cancelFirst()
			assert.Equal(t, []any{1}, rxtest.Values(rxtest.Drain(second)))
			rxtest.Drain(first)
		})
	})
	t.Run("a bounded wait rejects instead of hanging", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			_, first, second, cancelFirst := setup(t, time.Second)
			defer cancelFirst()
			items := rxtest.Drain(second)
			require.Len(t, items, 1)
			assert.ErrorIs(t, items[0].E, bulkhead.ErrBulkheadFull)
			assert.Equal(t, []any{1}, rxtest.Values(rxtest.Drain(first)))
		})
	})
	t.Run("drain concurrently", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			_, first, second, cancelFirst := setup(t, time.Hour)
			defer cancelFirst()
			var wg sync.WaitGroup
			wg.Go(func() { assert.Equal(t, []any{1}, rxtest.Values(rxtest.Drain(second))) })
			wg.Go(func() { assert.Equal(t, []any{1}, rxtest.Values(rxtest.Drain(first))) })
			wg.Wait()
		})
	})
}

// recordingTB captures what the permit-leak check reports, so that the
// check itself can be tested.
type recordingTB struct {
	testing.TB
	cleanups []func()
	errs     []string
}

func (r *recordingTB) Helper()                   {}
func (r *recordingTB) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }

func TestAConsumerThatWalksAwayHoldsItsPermitAndCheckPermitsReportsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		user := &recordingTB{TB: t}
		testkit.CheckPermits(user, b)

		ctx, cancel := context.WithCancel(t.Context()) // only so that this test can clean up
		ch := observable.Bulkhead(b, rxgo.Just(1, 2)()).Observe(rxgo.WithContext(ctx))
		<-ch // read one item, then walk away: no drain, no cancel
		synctest.Wait()

		for _, f := range user.cleanups { // the user's test ends here
			f()
		}
		require.Len(t, user.errs, 1)
		assert.Contains(t, user.errs[0], `bulkhead "partner"`)
		assert.Contains(t, user.errs[0], "1 permit(s) held")

		cancel() // what the user should have done
		rxtest.Drain(ch)
	})
}

func TestRetryOnFullReobservesAndReacquires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		require.True(t, b.TryAcquirePermission()) // another call holds the only permit
		src := &rxtest.Probe{Items: []any{"ok"}}
		var retried []error
		// Retry observes at once (rxgo's Retry is eager).
		obs := observable.Bulkhead(b, src.Observable()).Retry(3, func(err error) bool {
			retried = append(retried, err)
			if len(retried) == 2 {
				b.ReleasePermission() // the other call ends
			}
			return errors.Is(err, bulkhead.ErrBulkheadFull)
		})
		assert.Equal(t, []any{"ok"}, rxtest.Values(rxtest.Drain(obs.Observe())))
		require.Len(t, retried, 2)
		assert.Equal(t, int32(1), src.Observed.Load())
		assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Rejected, rxtest.Rejected, rxtest.Permitted, rxtest.Finished}, ev.Types())
	})
}

// constantBackOff implements rxgo's backoff.BackOff (NextBackOff, Reset).
type constantBackOff struct {
	d     time.Duration
	tries int
}

func (c *constantBackOff) NextBackOff() time.Duration {
	if c.tries == 0 {
		return -1 // backoff.Stop
	}
	c.tries--
	return c.d
}
func (c *constantBackOff) Reset() {}

func TestBackOffRetryOnFullReacquiresAfterTheBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		require.True(t, b.TryAcquirePermission())
		time.AfterFunc(1500*time.Millisecond, b.ReleasePermission) // the other call ends
		start := time.Now()
		obs := observable.Bulkhead(b, rxgo.Just("ok")()).BackOffRetry(&constantBackOff{d: time.Second, tries: 5})
		assert.Equal(t, []any{"ok"}, rxtest.Values(rxtest.Drain(obs.Observe())))
		assert.Equal(t, 2*time.Second, time.Since(start), "rejected at 0s and 1s, granted at 2s")
		assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Rejected, rxtest.Rejected, rxtest.Permitted, rxtest.Finished}, ev.Types())
	})
}

func TestBackOffRetryGivesUpWithTheFullError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ev := rxtest.Partner(t, 1, 0)
		require.True(t, b.TryAcquirePermission())
		defer b.ReleasePermission()
		obs := observable.Bulkhead(b, rxgo.Just("ok")()).BackOffRetry(&constantBackOff{d: time.Second, tries: 2})
		items := rxtest.Drain(obs.Observe())
		require.Len(t, items, 1)
		var full *bulkhead.FullError
		assert.ErrorAs(t, items[0].E, &full)
		assert.Equal(t, []bulkhead.EventType{rxtest.Permitted, rxtest.Rejected, rxtest.Rejected, rxtest.Rejected}, ev.Types())
	})
}
