package adaptive_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
)

// Call: "Give it back exactly once". A Call finished twice is a bug the
// Semaphore reports (it panics naming the bulkhead: more permits released
// than acquired); the controller's count stays as the Bulkhead's
// invariants say ("inFlight ... is never negative"), and a later window
// gives the algorithm no RTT of the call that never ran.
func TestHostileCallFinishedTwicePanicsAndLeavesTheCountAlone(t *testing.T) {
	alg := &fixed{next: 4}
	b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 4},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }})
	c, ok := b.TryAcquire()
	require.True(t, ok)
	clock.Advance(20 * ms)
	c.Finish(nil)
	assert.PanicsWithValue(t, `bulkhead "partner": released more permits than were acquired`, func() { c.Finish(nil) })
	assert.PanicsWithValue(t, `bulkhead "partner": released more permits than were acquired`, func() { b.FinishCall() })
	assert.PanicsWithValue(t, `bulkhead "partner": released more permits than were acquired`, func() { c.Release() })
	assert.Equal(t, 0, b.Stats().InFlight)
	runTyped(t, b, clock, 8, 1, 20*ms) // ten finishes in 180 ms, were the bad ones counted
	assert.Empty(t, alg.samples, "only nine calls finished")
	runTyped(t, b, clock, 1, 1, 20*ms)
	require.Len(t, alg.samples, 1)
	assert.Equal(t, 10, alg.samples[0].N)
}

// CallStart "means something only to the Bulkhead that returned it": a
// start from another adaptive Bulkhead given to FinishCallStarted is
// refused by the semaphore with a panic once the permit is back, and the
// controller counts the call back; the algorithm gets no sample timed from
// the other controller's clock.
func TestHostileStartOfAnotherBulkheadPanicsAndLosesNoPermit(t *testing.T) {
	other, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1}, adaptive.Config{})
	alg := &fixed{next: 1}
	b, _ := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 1},
		adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, Window: adaptive.Window{PerCall: true}})
	require.True(t, other.AcquirePermissionAsync().Granted())
	foreign := other.StartCall()
	require.NotEqual(t, bulkhead.CallStart{}, foreign)
	clock.Advance(10 * ms)
	require.True(t, b.AcquirePermissionAsync().Granted())
	assert.PanicsWithValue(t, `bulkhead "partner": FinishCallStarted given the CallStart of another bulkhead`,
		func() { b.FinishCallStarted(foreign) })
	assert.Equal(t, 0, b.Stats().InFlight)
	assert.Equal(t, 0, b.Metrics().InFlightCalls)
	require.Len(t, alg.samples, 1)
	assert.True(t, alg.samples[0].Matched, "matched with the oldest grant, not timed from the other's start")
	other.FinishCallStarted(foreign)
}
