package iterate_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/iterate"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// A loop's CallFinished carries the time from its grant to its end, also
// for a loop that waited for its permit (its wait is not counted).
func TestALoopReportsItsDurationFromItsGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := bulkhead.New("p", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: 4})
		require.NoError(t, err)
		testkit.CheckPermits(t, s)
		ev := testkit.RecordEvents(t, s)
		slow := func(yield func(int) bool) {
			time.Sleep(50 * time.Millisecond)
			yield(1)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for _, err := range iterate.Seq(context.Background(), s, slow) {
				require.NoError(t, err)
			}
		}()
		synctest.Wait()                                                  // the first loop holds the permit
		for _, err := range iterate.Seq(context.Background(), s, slow) { // queued for 50 ms
			require.NoError(t, err)
		}
		<-done
		var got []time.Duration
		for _, e := range ev.Events() {
			if e.Type == bulkhead.CallFinished {
				got = append(got, e.CallDuration)
			}
		}
		assert.True(t, slices.Equal(got, []time.Duration{50 * time.Millisecond, 50 * time.Millisecond}), "CallDurations %v", got)
	})
}
