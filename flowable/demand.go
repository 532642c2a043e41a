package flowable

import (
	"math"
	"sync/atomic"

	"github.com/rxbulkhead/bulkhead/internal/permit"
)

// ErrNonPositiveRequest is the errors.Is target of the error a subscriber
// receives through OnError when it calls Request(n) with n <= 0, violating
// Reactive Streams rule 3.9. The message quotes n.
var ErrNonPositiveRequest = permit.ErrNonPositiveRequest

// Unbounded is the demand that means "no limit" (rule 3.17).
const Unbounded = math.MaxInt64

// addDemand adds n > 0 to d, saturating at math.MaxInt64 (rule 3.17), and
// returns the value it replaced.
func addDemand(d *atomic.Int64, n int64) int64 {
	for {
		r := d.Load()
		if r == math.MaxInt64 {
			return r
		}
		nr := r + n
		if nr < 0 {
			nr = math.MaxInt64
		}
		if d.CompareAndSwap(r, nr) {
			return r
		}
	}
}

// badRequest records the first Request(n <= 0) in bad as n-1 (wrapping), so
// that 0 means none; badErr decodes it into the error to signal.
func badRequest(bad *atomic.Int64, n int64) { bad.CompareAndSwap(0, n-1) }

func badErr(b int64) error { return permit.NonPositiveRequestError(b + 1) }
