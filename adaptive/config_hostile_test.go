package adaptive_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
)

// Config.Max: "the ceiling of the limit", any int >= Min. An algorithm
// that asks for more than any int (a huge estimate, +Inf is kept out as
// non-finite) gets the ceiling, applied to the semaphore, also when the
// ceiling is math.MaxInt, which a float64 cannot hold exactly.
func TestHostileHugeEstimateUnderTheLargestCeilingAppliesTheCeiling(t *testing.T) {
	for _, max := range []int{math.MaxInt, math.MaxInt - 100, math.MaxInt - 600, 1 << 62} {
		alg := &fixed{next: 1e300}
		b, clock := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 2},
			adaptive.Config{Algorithm: func() adaptive.Algorithm { return alg }, Max: max})
		runTyped(t, b, clock, 10, 2, 50*ms)
		st := b.Stats()
		assert.Positive(t, st.Limit, "Max %d", max)
		assert.LessOrEqual(t, st.Limit, max)
		assert.Equal(t, st.Limit, b.Semaphore().Config().MaxConcurrentCalls, "Max %d: the limit is applied", max)
		assert.Greater(t, st.Limit, max/2)
	}
}
