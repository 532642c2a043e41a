package bulkhead

import (
	"math"
	"time"
)

// The zero value of every limit in this module's configurations means none:
// no permit, no queue, no wait. A limit without bound is set explicitly with
// one of these constants (the defaults do so where they want no bound).
const (
	// Unbounded is a count without bound, e.g. Config.MaxQueuedCalls.
	Unbounded = math.MaxInt
	// NoTimeout is a wait without bound, e.g. Config.MaxWaitDuration: a
	// call waits until a permit comes back or it is cancelled.
	NoTimeout time.Duration = math.MaxInt64
)
