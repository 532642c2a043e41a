package adaptive

import (
	"math"
	"time"
)

// Sample is what an Algorithm learns from one window of calls (see
// Config.Window), or from one call when Window.PerCall is set: how long
// calls took, how many ran at once, and whether the partner showed
// overload.
type Sample struct {
	// RTT is the mean time from grant to finish of the window's calls:
	// measured per call through Bulkhead.Acquire/TryAcquire, estimated with
	// Little's law for calls made through the plain bulkhead.Bulkhead
	// methods (see Bulkhead). It is always positive.
	RTT time.Duration
	// RTTDev is the standard deviation of the window's RTTs, from which an
	// algorithm can tell how much the mean RTT can be trusted (its standard
	// error is RTTDev/√N for independent calls). It is 0 for fewer than two
	// calls, and when Matched.
	RTTDev time.Duration
	// N is the number of calls the window sums up (1 for a per-call
	// sample).
	N int
	// InFlight is the most calls that held a permit at once during the
	// window. For a per-call sample it is the call's level: the calls in
	// flight once it was granted, itself included; for plain and watched
	// calls, whose finish does not say which call it is, the level of the
	// grant it is matched with (see Bulkhead and Watch). It is at least 1.
	InFlight int
	// Dropped reports that a call of the window ended in overload: marked by
	// the caller (Call.Finish with an error that Config.IsOverload accepts,
	// or Bulkhead.MarkOverload).
	Dropped bool
	// Drops is the number of the window's calls that ended in overload
	// (Dropped is Drops > 0).
	Drops int
	// Elapsed is how long the window lasted, from its start to the finish
	// that closed it, so that N/Elapsed is the rate at which calls
	// finished: with a no-load RTT, the partner's busy servers by Little's
	// law (SetPoint uses it). For a per-call sample it is the time since
	// the previous sample was taken (for the first: since the Bulkhead was
	// made), so the sum of the samples' Elapsed is the time since the start
	// (an algorithm fed per-call samples reads its clock from it, as Hinge
	// does) and N/Elapsed is still the finish rate. It may be 0 (two
	// finishes at the same instant).
	Elapsed time.Duration
	// PerCall reports a per-call sample (Window.PerCall): one call, N = 1,
	// and InFlight that call's level rather than a window's most. Capacity
	// and SetPoint take no rate from per-call samples' Elapsed (one call's
	// gap is no rate), as before it was set for them.
	PerCall bool
	// Matched reports that the window's RTTs were matched to grants, not
	// measured: calls made through the plain methods or watched (Watch).
	// FinishCall does not say which call finished, so RTT is still the
	// window's mean (see Bulkhead), but the spread of the calls' RTTs is
	// unknown and RTTDev is 0: a finish matched to the oldest grant
	// measures how long the oldest call has been in flight, which varies
	// far less than single RTTs do. An algorithm that needs the spread
	// estimates it otherwise (Capacity does, from the means of consecutive
	// windows).
	Matched bool
}

// An Algorithm turns samples into a concurrency limit. Update receives the
// limit in force (already within the controller's floor and ceiling) and
// one sample, and returns the limit it wants next; the controller clamps,
// smooths and applies it.
//
// An Algorithm keeps its own measurements (a no-load RTT, say), so each
// bulkhead needs its own value; Config.Algorithm makes one per bulkhead.
// The controller calls Update under its lock, never concurrently. Update
// must return a finite number for every sample (the controller treats
// anything else as "keep the limit"). A panic in Update goes on to the
// goroutine whose finishing call closed the window (for Watch, to the
// semaphore's event listener, which recovers it): that window is spent, the
// limit stays, and the call's permit still goes back to the semaphore.
type Algorithm interface {
	Update(limit float64, s Sample) float64
}

// Names of the built-in algorithms, as configuration files spell them.
const (
	NameAIMD      = "aimd"
	NameVegas     = "vegas"
	NameGradient2 = "gradient2"
	NameCapacity  = "capacity"
	NameSetPoint  = "setpoint"
	NameHinge     = "hinge"
)

// ByName returns a constructor of the built-in algorithm called name
// (NameAIMD, NameVegas, NameGradient2, NameCapacity, NameSetPoint or
// NameHinge), each with its defaults, and false for any other name. Hinge
// needs Window.PerCall (see Hinge).
func ByName(name string) (func() Algorithm, bool) {
	switch name {
	case NameAIMD:
		return func() Algorithm { return &AIMD{} }, true
	case NameVegas:
		return func() Algorithm { return &Vegas{} }, true
	case NameGradient2:
		return func() Algorithm { return &Gradient2{} }, true
	case NameCapacity:
		return func() Algorithm { return &Capacity{} }, true
	case NameSetPoint:
		return func() Algorithm { return &SetPoint{} }, true
	case NameHinge:
		return func() Algorithm { return &Hinge{} }, true
	}
	return nil, false
}

// Names lists the built-in algorithms in the order ByName knows them.
func Names() []string {
	return []string{NameAIMD, NameVegas, NameGradient2, NameCapacity, NameSetPoint, NameHinge}
}

// rttNanos is s.RTT in nanoseconds as a float, at least 1.
func rttNanos(s Sample) float64 { return math.Max(1, float64(s.RTT)) }

// log10Root is Netflix's Log10RootFunction: max(1, floor(log10 n)) below
// 1000 and floor(sqrt n) from there on.
func log10Root(limit float64) float64 {
	n := int(limit)
	if n < 1000 {
		return math.Max(1, math.Floor(math.Log10(math.Max(1, float64(n)))))
	}
	return math.Floor(math.Sqrt(float64(n)))
}

// orDefault returns v, or def when v is zero (the "zero means default"
// rule of every parameter).
func orDefault[T int | float64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
