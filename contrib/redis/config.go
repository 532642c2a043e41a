package redis

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// Policy is what a Bulkhead does while Redis cannot be reached.
type Policy uint8

const (
	// FailClosed rejects every call that needs Redis with a *StoreError
	// matching ErrUnavailable (never bulkhead.ErrBulkheadFull): the fleet
	// limit is never exceeded, and nothing runs while Redis is away. It is
	// the zero value.
	FailClosed Policy = iota
	// FailOver admits calls through a local in-process bulkhead.Semaphore of
	// LocalFraction × MaxConcurrentCalls permits (at least 1) while Redis is
	// away. With R replicas the fleet then admits up to R × that: choose
	// LocalFraction = 1/R to stay within the fleet limit.
	FailOver
)

// String returns "fail-closed" or "fail-over".
func (p Policy) String() string {
	switch p {
	case FailClosed:
		return "fail-closed"
	case FailOver:
		return "fail-over"
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// Config is the configuration of one fleet Bulkhead. MaxConcurrentCalls is
// the fleet limit until Bulkhead.ChangeConfig stores one in Redis, which
// then applies to every replica whatever it was configured with; until
// then every replica must use the same MaxConcurrentCalls for a name.
type Config struct {
	// Config holds the core fields:
	//   - MaxConcurrentCalls is the fleet-wide number of permits (>= 1).
	//   - MaxWaitDuration is how long a call may wait (0: never wait).
	//   - MaxQueuedCalls bounds the calls queued by this process (0: no
	//     queue, only with no wait; bulkhead.Unbounded: no bound); the
	//     fleet-wide queue is the sum over the replicas.
	//   - QueueOrder must be FIFO: the fleet grants the oldest ticket first.
	//   - ShadowMode must be false: a fleet bulkhead has no shadow mode.
	bulkhead.Config
	// Unreachable is the policy while Redis cannot be reached (FailClosed,
	// the zero value, or FailOver).
	Unreachable Policy
	// LocalFraction is, for FailOver, the share of MaxConcurrentCalls that
	// the local fallback admits in this process, in (0, 1]. It must be zero
	// for FailClosed.
	LocalFraction float64
}

// Validate returns a *bulkhead.ConfigError for the first invalid field.
func (c Config) Validate() error { return c.validateFor("") }

func (c Config) validateFor(name string) error {
	err := c.Config.Validate()
	if err == nil {
		switch {
		case c.QueueOrder != bulkhead.FIFO:
			err = &bulkhead.ConfigError{Field: "QueueOrder", Value: c.QueueOrder, Rule: "must be FIFO for a fleet bulkhead (the fleet grants the oldest ticket first)"}
		case c.ShadowMode:
			err = &bulkhead.ConfigError{Field: "ShadowMode", Value: c.ShadowMode, Rule: "is not supported by a fleet bulkhead (it would be ignored): try a limit with a Semaphore in shadow mode"}
		case c.Unreachable != FailClosed && c.Unreachable != FailOver:
			err = &bulkhead.ConfigError{Field: "Unreachable", Value: c.Unreachable, Rule: "must be FailClosed or FailOver"}
		case c.Unreachable == FailOver && (!(c.LocalFraction > 0) || c.LocalFraction > 1):
			err = &bulkhead.ConfigError{Field: "LocalFraction", Value: c.LocalFraction, Rule: "must be in (0, 1] with FailOver"}
		case c.Unreachable == FailClosed && c.LocalFraction != 0:
			err = &bulkhead.ConfigError{Field: "LocalFraction", Value: c.LocalFraction, Rule: "must be 0 with FailClosed (it is the FailOver share)"}
		}
	}
	if name != "" {
		nameConfigErrors(err, name)
	}
	return err
}

// nameConfigErrors sets Name on every *bulkhead.ConfigError in err (one, or
// several joined by Validate).
func nameConfigErrors(err error, name string) {
	if ce, ok := err.(*bulkhead.ConfigError); ok {
		ce.Name = name
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			nameConfigErrors(e, name)
		}
	}
}

// localLimit is the number of permits of the FailOver semaphore.
func (c Config) localLimit() int {
	return max(1, int(math.Ceil(c.LocalFraction*float64(c.MaxConcurrentCalls)-1e-9)))
}

// StoreConfig configures a Store. Every zero field takes the default its
// comment gives.
type StoreConfig struct {
	// KeyPrefix starts every key and channel; default "rxbulkhead:".
	KeyPrefix string
	// LeaseTTL is how long a lease lives unless renewed, and so how long the
	// permits of a crashed process stay taken; default 10s, at least 100ms.
	LeaseTTL time.Duration
	// RenewInterval is the period of the renewal round trip; default
	// LeaseTTL/3, less than LeaseTTL/2. A crashed holder's permits come back
	// within LeaseTTL after its last renewal, at most LeaseTTL +
	// RenewInterval after it was last known alive.
	RenewInterval time.Duration
	// TicketTTL is how long a waiting call's ticket lives unless renewed:
	// the tickets of a crashed process stop blocking the fleet's queue
	// within TicketTTL after their last renewal, at most TicketTTL ×
	// 4/3 after the process was last alive. The renewal loop renews the
	// tickets of this process every TicketTTL/3 (and its leases every
	// RenewInterval). Default 2s, or LeaseTTL if it is shorter; at least
	// 100ms.
	TicketTTL time.Duration
	// PollInterval is how often waiters ask Redis again if no release
	// notification arrives (pub/sub is lossy, and expiries publish
	// nothing); default 200ms.
	PollInterval time.Duration
	// Timeout bounds every round trip; a round trip that takes longer counts
	// as Redis being unreachable; default 1s.
	Timeout time.Duration
	// ProbeInterval is how often an unreachable Redis is tried again;
	// default 500ms.
	ProbeInterval time.Duration
	// WaitReplicas, if positive, ends every round trip that can grant a
	// permit with WAIT WaitReplicas (in the same pipeline): its grants are
	// delivered only once that many replicas acknowledged them, so that a
	// failover to one of those replicas keeps them, their leases and their
	// fencing tokens. A round trip whose writes fewer replicas acknowledged
	// within Timeout/2 counts as Redis being unreachable: its grants are
	// given back and each bulkhead's Policy applies until a probe passes.
	// Zero (the default): no WAIT, and a failover to a replica that lagged
	// may lose the last grants (see the guide). Not with a ClusterClient.
	WaitReplicas int
	// Clock measures MaxWaitDuration; default the real clock. Leases and
	// tickets expire on the Redis server's clock regardless.
	Clock bulkhead.Clock
}

func (c StoreConfig) withDefaults() (StoreConfig, error) {
	if c.KeyPrefix == "" {
		c.KeyPrefix = "rxbulkhead:"
	}
	def := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.LeaseTTL, 10*time.Second)
	def(&c.RenewInterval, c.LeaseTTL/3)
	def(&c.TicketTTL, min(2*time.Second, c.LeaseTTL))
	def(&c.PollInterval, 200*time.Millisecond)
	def(&c.Timeout, time.Second)
	def(&c.ProbeInterval, 500*time.Millisecond)
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	bad := func(field string, v any, rule string) error {
		return fmt.Errorf("redis: invalid StoreConfig: %s %s, got %v", field, rule, v)
	}
	switch {
	case strings.ContainsAny(c.KeyPrefix, "{}"):
		return c, bad("KeyPrefix", fmt.Sprintf("%q", c.KeyPrefix), "must not contain '{' or '}' (they delimit the hash tag)")
	case c.LeaseTTL < 100*time.Millisecond:
		return c, bad("LeaseTTL", c.LeaseTTL, "must be >= 100ms")
	case c.RenewInterval <= 0 || c.RenewInterval >= c.LeaseTTL/2:
		return c, bad("RenewInterval", c.RenewInterval, fmt.Sprintf("must be > 0 and < LeaseTTL/2 (%v)", c.LeaseTTL/2))
	case c.TicketTTL < 100*time.Millisecond:
		return c, bad("TicketTTL", c.TicketTTL, "must be >= 100ms")
	case c.WaitReplicas < 0:
		return c, bad("WaitReplicas", c.WaitReplicas, "must be >= 0")
	case c.PollInterval < 0:
		return c, bad("PollInterval", c.PollInterval, "must be > 0")
	case c.Timeout < 0:
		return c, bad("Timeout", c.Timeout, "must be > 0")
	case c.ProbeInterval < 0:
		return c, bad("ProbeInterval", c.ProbeInterval, "must be > 0")
	}
	return c, nil
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) bulkhead.Timer { return time.AfterFunc(d, f) }
