// Package callstart holds bulkhead.CallStart (an alias of Start), so that
// the module's own Bulkheads that wrap a Semaphore (adaptive.Bulkhead) can
// make and read starts of their own, while the type stays opaque to users:
// its fields are unexported, and the functions that make and read it are in
// this internal package.
//
// A Start is an offset, plus one, from the time its epoch points to. The
// epoch identifies who made it: a Semaphore's stamps (package bulkhead), or
// a wrapper's own epoch, which a Semaphore refuses.
package callstart

import (
	"math"
	"time"
)

// Start is bulkhead.CallStart; see its doc comment. The zero Start is an
// unknown start.
type Start struct {
	ep *time.Time // the epoch of the stamps that made it; nil for the zero Start
	at int64      // an offset from *ep plus one; 0 for the zero Start
}

// Make returns the Start at offset at (an Offset, so at least one) from
// *ep. ep must not be nil, nor change afterwards.
func Make(ep *time.Time, at int64) Start { return Start{ep: ep, at: at} }

// Epoch returns the epoch of s: nil for the zero Start.
func Epoch(s Start) *time.Time { return s.ep }

// At returns the offset of s: 0 for the zero Start.
func At(s Start) int64 { return s.at }

// Since returns the time from s to now, never negative: zero for the zero
// Start. The caller checks that s is one of its own (Epoch).
func Since(s Start, now time.Time) time.Duration {
	if s.at == 0 || s.ep == nil {
		return 0
	}
	return time.Duration(max(Offset(now, *s.ep)-s.at, 0))
}

// Offset encodes t as an offset from epoch plus one, at least one (t
// before epoch: a goroutine that read the clock before the one that set
// the epoch), saturating rather than wrapping around.
func Offset(t, epoch time.Time) int64 {
	v := int64(t.Sub(epoch))
	if v < math.MaxInt64 {
		v++
	}
	return max(v, 1)
}
