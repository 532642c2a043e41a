package adaptive

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Config is the configuration of an adaptive Bulkhead. The zero Config is
// valid: Capacity between 1 and 1000 permits, starting from the
// semaphore's MaxConcurrentCalls, no smoothing, windows of 100 ms to 1 s.
type Config struct {
	// Algorithm makes the limit algorithm; it is called once per Bulkhead,
	// because an algorithm keeps per-partner measurements. Nil means
	// Capacity with its defaults. A func that returns nil, or a nil
	// pointer (a nil *Capacity), makes New fail with a *ConfigError naming
	// Algorithm.
	Algorithm func() Algorithm
	// Min is the floor of the limit. Zero means 1.
	Min int
	// Max is the ceiling of the limit. Zero means 1000.
	Max int
	// Initial is the limit to start from. Zero means the semaphore's
	// MaxConcurrentCalls when it is wrapped (clamped to [Min, Max]).
	Initial int
	// Smoothing is the weight of the previous limit when a new one is
	// computed: the limit becomes Smoothing × old + (1 − Smoothing) × the
	// algorithm's estimate. Zero means none (the estimate is taken as it
	// is); it must be in [0, 1).
	Smoothing float64
	// Window says how samples are grouped; see Window.
	Window Window
	// MaxCutPerSecond is the safety net under every algorithm: the largest
	// fraction of the limit that may be cut within one period of a second
	// (the limit never drops below (1 − MaxCutPerSecond) × the limit at
	// the start of the period), so that no algorithm can take a partner
	// from a healthy limit to the floor within a few windows. Zero means
	// 0.5 (reaching the floor from 1000 takes at least 10 s); 1 turns the
	// bound off; it must be in [0, 1].
	MaxCutPerSecond float64
	// IsOverload reports whether a call error means that the partner is
	// overloaded (a drop, for the algorithm). Nil means errors.Is(err,
	// context.DeadlineExceeded). It is called by Call.Finish for a non-nil
	// error; if it panics, the panic goes on to the caller of Finish once
	// the call's permit is back (the call counts as no overload).
	IsOverload func(err error) bool
}

// Window says when the calls finished so far are summed up into one Sample
// and given to the algorithm: at the first finish after MinDuration (or
// twice the last window's RTT, if longer) when at least MinSamples calls
// finished, or at the first finish after MaxDuration whatever their number.
// At most one limit change happens per window, which keeps the limit from
// flapping.
type Window struct {
	// MinDuration is the shortest window. Zero means 100 ms.
	MinDuration time.Duration
	// MaxDuration is the longest window before a sample is taken with
	// fewer than MinSamples calls. Zero means 1 s.
	MaxDuration time.Duration
	// MinSamples is the number of finished calls a window needs before
	// MaxDuration. Zero means 10.
	MinSamples int
	// DiscardShort drops a window that reached MaxDuration with fewer than
	// MinSamples calls instead of giving it to the algorithm, as Netflix's
	// WindowedLimit does (with MinDuration and MaxDuration 1 s and
	// MinSamples 10, this is that WindowedLimit).
	DiscardShort bool
	// PerCall gives every finished call to the algorithm as a sample of
	// its own (N = 1, Sample.PerCall set), as Netflix's SimpleLimiter does
	// with a limit that is not windowed; the durations and MinSamples are
	// then unused. A per-call sample's Elapsed is the time since the
	// previous sample (see Sample.Elapsed).
	PerCall bool
}

// resolved is a Config with every default filled in.
type resolved struct {
	newAlgorithm func() Algorithm
	min, max     int
	initial      int
	smoothing    float64
	minWindow    time.Duration
	maxWindow    time.Duration
	minSamples   int
	discardShort bool
	perCall      bool
	maxCut       float64
	isOverload   func(error) bool
}

// ErrInvalidConfig is the errors.Is target of every error that Validate,
// New and NewRegistry return for a bad Config.
var ErrInvalidConfig = errors.New("adaptive: invalid config")

// ConfigError names the field of a Config that has a bad value.
type ConfigError struct {
	Name  string // the bulkhead the config was meant for; may be empty
	Field string // e.g. "Max"
	Value any
	Rule  string // e.g. "must be >= Min"
}

// Error returns a message with the bulkhead, the field, the rule and the
// value.
func (e *ConfigError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("adaptive: invalid config: %s %s, got %v", e.Field, e.Rule, e.Value)
	}
	return fmt.Sprintf("adaptive bulkhead %q: invalid config: %s %s, got %v", e.Name, e.Field, e.Rule, e.Value)
}

// Is reports whether target is ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// Validate returns a *ConfigError for the first bad field, or nil.
func (c Config) Validate() error {
	_, err := c.resolve()
	return err
}

func (c Config) resolve() (resolved, error) {
	r := resolved{
		newAlgorithm: c.Algorithm,
		min:          orDefault(c.Min, 1),
		max:          orDefault(c.Max, 1000),
		initial:      c.Initial,
		smoothing:    c.Smoothing,
		minWindow:    orDefault(c.Window.MinDuration, 100*time.Millisecond),
		maxWindow:    orDefault(c.Window.MaxDuration, time.Second),
		minSamples:   orDefault(c.Window.MinSamples, 10),
		discardShort: c.Window.DiscardShort,
		perCall:      c.Window.PerCall,
		maxCut:       orDefault(c.MaxCutPerSecond, 0.5),
		isOverload:   c.IsOverload,
	}
	if r.newAlgorithm == nil {
		r.newAlgorithm = func() Algorithm { return &Capacity{} }
	}
	if r.isOverload == nil {
		r.isOverload = func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }
	}
	switch {
	case c.Min < 0:
		return r, &ConfigError{Field: "Min", Value: c.Min, Rule: "must be >= 0"}
	case c.Max < 0:
		return r, &ConfigError{Field: "Max", Value: c.Max, Rule: "must be >= 0"}
	case r.max < r.min:
		return r, &ConfigError{Field: "Max", Value: r.max, Rule: fmt.Sprintf("must be >= Min (%d)", r.min)}
	case c.Initial < 0:
		return r, &ConfigError{Field: "Initial", Value: c.Initial, Rule: "must be >= 0"}
	case !(c.Smoothing >= 0 && c.Smoothing < 1):
		return r, &ConfigError{Field: "Smoothing", Value: c.Smoothing, Rule: "must be in [0, 1)"}
	case !(c.MaxCutPerSecond >= 0 && c.MaxCutPerSecond <= 1):
		return r, &ConfigError{Field: "MaxCutPerSecond", Value: c.MaxCutPerSecond, Rule: "must be in [0, 1]"}
	case c.Window.MinDuration < 0:
		return r, &ConfigError{Field: "Window.MinDuration", Value: c.Window.MinDuration, Rule: "must be >= 0"}
	case c.Window.MaxDuration < 0:
		return r, &ConfigError{Field: "Window.MaxDuration", Value: c.Window.MaxDuration, Rule: "must be >= 0"}
	case r.maxWindow < r.minWindow:
		return r, &ConfigError{Field: "Window.MaxDuration", Value: r.maxWindow, Rule: fmt.Sprintf("must be >= Window.MinDuration (%v)", r.minWindow)}
	case c.Window.MinSamples < 0:
		return r, &ConfigError{Field: "Window.MinSamples", Value: c.Window.MinSamples, Rule: "must be >= 0"}
	}
	return r, nil
}
