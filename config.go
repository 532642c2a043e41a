package bulkhead

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// QueueOrder is the order in which queued calls are granted permits.
type QueueOrder uint8

const (
	// FIFO grants the oldest waiter first. It is the zero value.
	FIFO QueueOrder = iota
	// LIFO grants the newest waiter first; when the queue is full, the
	// oldest waiter is evicted (Reason Evicted) to make room for a newcomer.
	LIFO
)

// String returns "FIFO" or "LIFO".
func (o QueueOrder) String() string {
	switch o {
	case FIFO:
		return "FIFO"
	case LIFO:
		return "LIFO"
	}
	return fmt.Sprintf("QueueOrder(%d)", uint8(o))
}

// MarshalText returns "FIFO" or "LIFO". It fails for any other value.
func (o QueueOrder) MarshalText() ([]byte, error) {
	if o != FIFO && o != LIFO {
		return nil, fmt.Errorf("bulkhead: cannot marshal %v: want FIFO or LIFO", o)
	}
	return []byte(o.String()), nil
}

// UnmarshalText accepts "FIFO" or "LIFO" in any letter case. On failure it
// returns an error quoting the text and leaves o unchanged.
func (o *QueueOrder) UnmarshalText(text []byte) error {
	switch {
	case strings.EqualFold(string(text), "FIFO"):
		*o = FIFO
	case strings.EqualFold(string(text), "LIFO"):
		*o = LIFO
	default:
		return fmt.Errorf("bulkhead: queue order %q: want FIFO or LIFO", text)
	}
	return nil
}

// Config is the configuration of a Semaphore. The zero Config is not valid
// (MaxConcurrentCalls must be at least 1); start from DefaultConfig.
//
// As for every limit of this module, zero means none: MaxWaitDuration 0
// never waits, MaxQueuedCalls 0 queues nobody. No bound is written with the
// named constants Unbounded and NoTimeout.
type Config struct {
	// MaxConcurrentCalls is the number of permits: calls allowed to run at
	// once. It must be at least 1 (resilience4j accepts 0, a bulkhead that
	// rejects every call; here that is an error, so that a missing setting
	// cannot turn a partner off).
	MaxConcurrentCalls int
	// MaxWaitDuration is how long a call may wait for a permit. Zero means
	// never wait: a call that finds no permit is rejected at once (NoWait),
	// as in resilience4j. NoTimeout waits without bound. It must not be
	// negative.
	MaxWaitDuration time.Duration
	// MaxQueuedCalls bounds the wait queue. Zero means no queue, which is
	// only valid with a MaxWaitDuration of zero (a wait needs a queue).
	// Unbounded means no bound other than MaxWaitDuration. It must not be
	// negative.
	MaxQueuedCalls int
	// QueueOrder is FIFO (the zero value) or LIFO.
	QueueOrder QueueOrder
	// ShadowMode lets every call through at once, so that a limit can be
	// tried on live traffic before it is enforced: a call that would have
	// been rejected or queued is granted anyway, after a CallShadowed event
	// whose Reason says what would have happened (NoWait, QueueFull,
	// Evicted, or zero: it would have waited in the queue). Nothing is
	// rejected and nothing is queued, but for bad input: a weighted call
	// heavier than MaxConcurrentCalls (SemaphoreCall), which no limit of
	// that size could ever grant, is rejected with a *TooHeavyError in
	// shadow mode too. See shadow.go and docs/guide.md "Shadow mode" for how
	// it counts and how ChangeConfig switches it.
	ShadowMode bool
}

// DefaultConfig returns resilience4j's defaults: 25 concurrent calls, no wait,
// no queue bound (Unbounded), FIFO. Setting a MaxWaitDuration on it is
// enough to make calls wait.
func DefaultConfig() Config {
	return Config{MaxConcurrentCalls: 25, MaxQueuedCalls: Unbounded}
}

// ErrInvalidConfig is the errors.Is target of every *ConfigError.
var ErrInvalidConfig = errors.New("bulkhead: invalid config")

// ConfigError reports a configuration field with a bad value.
type ConfigError struct {
	Name  string // the bulkhead (or registry config) the value was meant for; may be empty
	Field string // the Config field, e.g. "MaxConcurrentCalls"
	Value any    // the rejected value
	Rule  string // what the value must be, e.g. "must be >= 1"
}

// Error returns a message naming the bulkhead, the field, the value and the rule.
func (e *ConfigError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("bulkhead: invalid config: %s %s, got %v", e.Field, e.Rule, e.Value)
	}
	return fmt.Sprintf("bulkhead %q: invalid config: %s %s, got %v", e.Name, e.Field, e.Rule, e.Value)
}

// Is reports whether target is ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// Validate returns nil if c is valid. Otherwise it reports every invalid
// field, in field order: one *ConfigError, or several joined with
// errors.Join (errors.As finds the first).
func (c Config) Validate() error {
	var errs []error
	if c.MaxConcurrentCalls < 1 {
		errs = append(errs, &ConfigError{Field: "MaxConcurrentCalls", Value: c.MaxConcurrentCalls, Rule: "must be >= 1"})
	}
	if c.MaxWaitDuration < 0 {
		errs = append(errs, &ConfigError{Field: "MaxWaitDuration", Value: c.MaxWaitDuration, Rule: "must be >= 0"})
	}
	switch {
	case c.MaxQueuedCalls < 0:
		errs = append(errs, &ConfigError{Field: "MaxQueuedCalls", Value: c.MaxQueuedCalls, Rule: "must be >= 0"})
	case c.MaxWaitDuration > 0 && c.MaxQueuedCalls == 0:
		// A wait needs a queue: zero means no queue, so it would silently
		// turn the wait off.
		errs = append(errs, &ConfigError{Field: "MaxQueuedCalls", Value: c.MaxQueuedCalls, Rule: "must be >= 1 when MaxWaitDuration is positive (bulkhead.Unbounded for no bound)"})
	}
	if c.QueueOrder != FIFO && c.QueueOrder != LIFO {
		errs = append(errs, &ConfigError{Field: "QueueOrder", Value: c.QueueOrder, Rule: "must be FIFO or LIFO"})
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

// validateFor is Validate with the bulkhead's name in every error.
func (c Config) validateFor(name string) error {
	err := c.Validate()
	for _, e := range configErrors(err) {
		e.Name = name
	}
	return err
}

// configErrors returns the *ConfigError values of an error of Validate.
func configErrors(err error) []*ConfigError {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]*ConfigError, 0, len(errs))
	for _, e := range errs {
		if ce, ok := e.(*ConfigError); ok {
			out = append(out, ce)
		}
	}
	return out
}

// String renders the configuration as %+v would, with Unbounded and
// NoTimeout by name: {MaxConcurrentCalls:25 MaxWaitDuration:0s
// MaxQueuedCalls:Unbounded QueueOrder:FIFO}, and ShadowMode:true at the
// end when it is set.
func (c Config) String() string {
	wait := c.MaxWaitDuration.String()
	if c.MaxWaitDuration == NoTimeout {
		wait = "NoTimeout"
	}
	queued := fmt.Sprint(c.MaxQueuedCalls)
	if c.MaxQueuedCalls == Unbounded {
		queued = "Unbounded"
	}
	shadow := ""
	if c.ShadowMode {
		shadow = " ShadowMode:true"
	}
	return fmt.Sprintf("{MaxConcurrentCalls:%d MaxWaitDuration:%s MaxQueuedCalls:%s QueueOrder:%s%s}", c.MaxConcurrentCalls, wait, queued, c.QueueOrder, shadow)
}
