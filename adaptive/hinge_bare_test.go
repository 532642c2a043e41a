package adaptive_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rxbulkhead/bulkhead/adaptive"
)

// atFloor returns the longest run of limits at 1 in limits (one every
// 100 ms), in time: each limit counts for 100 ms.
func atFloor(limits []int) time.Duration {
	var run, longest time.Duration
	for _, l := range limits {
		if l > 1 {
			run = 0
			continue
		}
		run += 100 * ms
		longest = max(longest, run)
	}
	return longest
}

// A Hinge that starts at the floor (1 permit) on a healthy but slow
// partner (10 servers at S = 200 or 300 ms, half loaded) sees one call
// finish every S or so: it waited for 5 calls at level 1 and held a probe
// there for 0.8 s, and the limit sat at 1 for 1.9 s and 4.4 s. On the
// matrix's two-kind partner, RTTs matched with a bare FinishCall took it
// there the same way (an S half the true one read as a queue). A limit
// held at the floor for 0.7 s with no call given up now leaves it, at the
// first finish after that: within 0.7 s + 2 × S (+ the 100 ms of a
// trace).
func TestHingeDoesNotSitAtTheFloorOnAHealthyPartner(t *testing.T) {
	for _, s := range []time.Duration{200 * ms, 300 * ms} {
		p := newQueuePartner(t, hingeConfig(&adaptive.Hinge{}), 1, 10, 0.5)
		p.s, p.rate = s, 0.5*10/s.Seconds()
		p.run(5 * time.Second)
		p.close()
		assert.LessOrEqual(t, atFloor(p.limits), 700*ms+2*s+100*ms, "S %v: limits %v", s, p.limits)
		assert.Greater(t, p.meanLimit(3, 5), 3.0, "S %v: limits %v", s, p.limits)
	}
}
