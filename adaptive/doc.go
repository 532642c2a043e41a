// Package adaptive makes a bulkhead's limit follow its partner: a
// controller times the calls of a *bulkhead.Semaphore, gives them window by
// window to a limit Algorithm and applies the limit it returns with
// ChangeConfig, between a floor and a ceiling.
//
// The algorithms are small values behind one interface (a Sample in, a
// limit out): AIMD, Vegas and Gradient2 follow Netflix concurrency-limits
// with its defaults (Window.PerCall and Window.DiscardShort wire them as
// Netflix's SimpleLimiter and WindowedLimit do); Capacity, the default, is
// this package's own, built to settle on the partner's capacity without
// acting on noise; SetPoint, an option, holds a set point above the
// capacity it estimates instead of probing; Hinge, an option for per-call
// samples of typed calls only, fits the RTT of each level of concurrency
// to find the capacity (docs/benchmarks.md, "Adaptive limits", compares
// them with static limits and failsafe-go on a matrix of simulated
// partners). Whatever the
// algorithm, Config.MaxCutPerSecond bounds how fast the limit falls, and
// OnFloor and Stats report a limit that sits at its floor.
//
// New wraps one Semaphore; NewRegistry wraps a *bulkhead.Registry so that
// every partner adapts on its own. A Bulkhead implements bulkhead.Bulkhead,
// so the operators take it unchanged; its Acquire and TryAcquire return a
// Call that measures its RTT exactly, and so do the operators, which give
// each call's start back (StartCall, FinishCallStarted), while a bare
// FinishCall is matched with the oldest grant in flight (see Bulkhead). Watch and
// WatchRegistry learn from the semaphores' events instead, for integrations
// that hold the *Semaphore or the *Registry themselves (bulkheadhttp,
// contrib/grpc); a call that finishes with its start (a Lease,
// FinishCallStarted) gives them its exact RTT through the event's
// CallDuration. Nothing runs in the background:
// windows close on the goroutine of a finishing call, and time comes from the
// injected bulkhead.Clock (WithClock), so tests run on a testkit.VirtualClock.
package adaptive
