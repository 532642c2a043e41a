// Package clock holds the time helpers that the Semaphore (package
// bulkhead) and the Pool (package pool) share: the real clock, offsets from
// an epoch read on the monotonic clock, and saturating deadline arithmetic.
//
// The bulkhead.Clock and bulkhead.Timer interfaces live in the root
// package, which imports this one; Real is therefore generic in the Timer
// type, so that Real[bulkhead.Timer] implements bulkhead.Clock while this
// package does not import the root.
package clock

import (
	"math"
	"time"
)

// Real is the time package as a clock whose AfterFunc returns a T, the
// caller's Timer interface; *time.Timer must implement T (Stop() bool).
// Inside a testing/synctest bubble it runs on the bubble's fake time.
type Real[T interface{ Stop() bool }] struct{}

// Now returns time.Now().
func (Real[T]) Now() time.Time { return time.Now() }

// AfterFunc returns time.AfterFunc(d, f) as a T.
func (Real[T]) AfterFunc(d time.Duration, f func()) T {
	return any(time.AfterFunc(d, f)).(T)
}

// Since returns c's time as an offset from epoch, a time c returned
// earlier. On Real[T] it reads only the monotonic clock (time.Since), half
// the cost of time.Now on machines where reading the wall clock is slow.
func Since[T interface{ Stop() bool }](c interface{ Now() time.Time }, epoch time.Time) time.Duration {
	if _, ok := c.(Real[T]); ok {
		return time.Since(epoch)
	}
	return c.Now().Sub(epoch)
}

// Add returns a+b, saturating at math.MaxInt64 instead of wrapping around,
// for b >= 0: a deadline that far away is never reached.
func Add(a, b time.Duration) time.Duration {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
