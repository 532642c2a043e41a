package pool

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// Config is the configuration of a Pool.
//
// Every limit follows the project's zero-value rule: zero means none (no
// worker kept idle, no queue, no idle time, no wait in the queue), and "no
// bound" is a named constant, bulkhead.Unbounded for a count and
// bulkhead.NoTimeout for a duration, which DefaultConfig sets explicitly
// where its default has no bound. The zero Config is not valid, because a
// pool needs a worker (MaxWorkers >= 1); start from DefaultConfig.
//
// Unlike java.util.concurrent.ThreadPoolExecutor (which resilience4j's
// ThreadPoolBulkhead uses), a Pool does not wait for its queue to fill
// before it starts workers above CoreWorkers: a task goes to an idle
// worker, else to a new worker while fewer than MaxWorkers run, and only
// then to the queue. CoreWorkers only says how many idle workers are kept.
type Config struct {
	// MaxWorkers bounds the workers, hence the tasks running at once. It
	// must be at least 1; bulkhead.Unbounded starts a worker for every task
	// that finds none idle.
	MaxWorkers int
	// CoreWorkers is the number of idle workers kept alive; workers above
	// it retire after KeepAlive without work. Zero keeps none. Workers are
	// started lazily, core ones included. It must be between 0 and
	// MaxWorkers.
	CoreWorkers int
	// QueueCapacity bounds the tasks waiting for a worker; a task that
	// finds MaxWorkers busy and the queue full is rejected at once (Reason
	// QueueFull). Zero means no queue: a task that finds MaxWorkers busy is
	// rejected at once (Reason NoWait). It must not be negative, and it is
	// zero exactly when MaxQueueWait is. bulkhead.Unbounded removes the
	// bound, which the guide advises against: a queue without bound turns
	// an outage of the dependency into memory growth.
	QueueCapacity int
	// KeepAlive is how long a worker above CoreWorkers stays idle before it
	// retires, measured on the Pool's Clock. Zero retires it as soon as it
	// finds no work; bulkhead.NoTimeout never retires it. It must not be
	// negative.
	KeepAlive time.Duration
	// MaxQueueWait bounds how long a task may wait in the queue, measured
	// on the Pool's Clock; a task still queued then is rejected (Reason
	// WaitTimeout). Zero means a task never waits in the queue, as
	// bulkhead.Config.MaxWaitDuration zero means a call never waits: it
	// runs at once on a worker or is rejected at once (Reason NoWait).
	// bulkhead.NoTimeout means no bound other than the context given to
	// Submit. It must not be negative, and it is zero exactly when
	// QueueCapacity is: a wait needs a queue and a queue needs a wait, so
	// neither can be turned off silently by a zero left in the other. It
	// does not limit how long a task runs.
	MaxQueueWait time.Duration
}

// DefaultConfig returns resilience4j's ThreadPoolBulkhead defaults:
// MaxWorkers runtime.NumCPU(), CoreWorkers one less (at least 1),
// QueueCapacity 100, KeepAlive 20ms, and MaxQueueWait bulkhead.NoTimeout
// (a task waits in the queue until a worker takes it or its context ends).
//
// These defaults suit CPU-bound work. For blocking calls to a dependency,
// size MaxWorkers for the dependency (how many calls it can take at once),
// not for the CPUs.
func DefaultConfig() Config {
	n := runtime.NumCPU()
	return Config{
		MaxWorkers:    n,
		CoreWorkers:   max(n-1, 1),
		QueueCapacity: 100,
		KeepAlive:     20 * time.Millisecond,
		MaxQueueWait:  bulkhead.NoTimeout,
	}
}

// Validate returns a *bulkhead.ConfigError for the first invalid field, or
// nil.
func (c Config) Validate() error {
	switch {
	case c.MaxWorkers < 1:
		return &bulkhead.ConfigError{Field: "MaxWorkers", Value: c.MaxWorkers, Rule: "must be >= 1"}
	case c.CoreWorkers < 0:
		return &bulkhead.ConfigError{Field: "CoreWorkers", Value: c.CoreWorkers, Rule: "must be >= 0"}
	case c.CoreWorkers > c.MaxWorkers:
		return &bulkhead.ConfigError{Field: "CoreWorkers", Value: c.CoreWorkers, Rule: fmt.Sprintf("must be <= MaxWorkers (%d)", c.MaxWorkers)}
	case c.QueueCapacity < 0:
		return &bulkhead.ConfigError{Field: "QueueCapacity", Value: c.QueueCapacity, Rule: "must be >= 0"}
	case c.KeepAlive < 0:
		return &bulkhead.ConfigError{Field: "KeepAlive", Value: c.KeepAlive, Rule: "must be >= 0"}
	case c.MaxQueueWait < 0:
		return &bulkhead.ConfigError{Field: "MaxQueueWait", Value: c.MaxQueueWait, Rule: "must be >= 0"}
	case c.MaxQueueWait > 0 && c.QueueCapacity == 0:
		// A wait needs a queue, as for bulkhead.Config: zero means no
		// queue, so it would silently turn the wait off.
		return &bulkhead.ConfigError{Field: "QueueCapacity", Value: c.QueueCapacity, Rule: "must be >= 1 when MaxQueueWait is positive (bulkhead.Unbounded for no bound)"}
	case c.QueueCapacity > 0 && c.MaxQueueWait == 0:
		// And a queue needs a wait: zero means a task never waits, so it
		// would silently turn the queue off.
		return &bulkhead.ConfigError{Field: "MaxQueueWait", Value: c.MaxQueueWait, Rule: "must be positive when QueueCapacity is (bulkhead.NoTimeout for no bound)"}
	}
	return nil
}

// validateFor is Validate with the pool's (or the named configuration's)
// name in the error.
func (c Config) validateFor(name string) error {
	err := c.Validate()
	var ce *bulkhead.ConfigError
	if errors.As(err, &ce) {
		ce.Name = name
	}
	return err
}

// String renders the configuration as %+v would, with bulkhead.Unbounded
// and bulkhead.NoTimeout by name: {MaxWorkers:8 CoreWorkers:7
// QueueCapacity:100 KeepAlive:20ms MaxQueueWait:NoTimeout}.
func (c Config) String() string {
	return fmt.Sprintf("{MaxWorkers:%s CoreWorkers:%s QueueCapacity:%s KeepAlive:%s MaxQueueWait:%s}",
		count(c.MaxWorkers), count(c.CoreWorkers), count(c.QueueCapacity), wait(c.KeepAlive), wait(c.MaxQueueWait))
}

func count(n int) string {
	if n == bulkhead.Unbounded {
		return "Unbounded"
	}
	return fmt.Sprint(n)
}

func wait(d time.Duration) string {
	if d == bulkhead.NoTimeout {
		return "NoTimeout"
	}
	return d.String()
}
