package bulkhead

import (
	"errors"
	"fmt"
	"runtime"
	"time"
)

// PoolConfig is the configuration of a Pool. The zero PoolConfig is not
// valid (MaxWorkers must be at least 1); start from DefaultPoolConfig.
//
// Unlike java.util.concurrent.ThreadPoolExecutor (which resilience4j's
// ThreadPoolBulkhead uses), a Pool does not wait for its queue to fill
// before it starts workers above CoreWorkers: a task goes to an idle worker,
// else to a new worker while fewer than MaxWorkers run, and only then to the
// queue. CoreWorkers only says how many idle workers are kept.
type PoolConfig struct {
	// MaxWorkers bounds the workers, hence the tasks running at once. It
	// must be at least 1. Default: runtime.NumCPU().
	MaxWorkers int
	// CoreWorkers is the number of workers kept alive while idle; workers
	// above it retire after KeepAlive without work. Workers are started
	// lazily, core ones included. It must be between 0 and MaxWorkers.
	// Default: runtime.NumCPU()-1, at least 1.
	CoreWorkers int
	// QueueCapacity bounds the tasks waiting for a worker; a task submitted
	// when MaxWorkers are busy and the queue is full is rejected at once
	// (Reason QueueFull). Zero means no queue: a task runs at once or is
	// rejected. It must not be negative; there is no unbounded queue.
	// Default: 100.
	QueueCapacity int
	// KeepAlive is how long a worker above CoreWorkers stays idle before it
	// retires, measured on the Pool's Clock. Zero retires it as soon as it
	// finds no work. It must not be negative. Default: 20ms.
	KeepAlive time.Duration
	// MaxQueueWait bounds how long a task may wait in the queue, measured
	// on the Pool's Clock; a task still queued then is rejected (Reason
	// WaitTimeout). Zero means no bound other than the context given to
	// Submit. It must not be negative. Default: 0. It does not limit how
	// long a task runs.
	MaxQueueWait time.Duration
}

// DefaultPoolConfig returns resilience4j's ThreadPoolBulkhead defaults:
// MaxWorkers runtime.NumCPU(), CoreWorkers one less (at least 1),
// QueueCapacity 100, KeepAlive 20ms, and no MaxQueueWait.
//
// These defaults suit CPU-bound work. For blocking calls to a dependency,
// size MaxWorkers for the dependency (how many calls it can take at once),
// not for the CPUs.
func DefaultPoolConfig() PoolConfig {
	n := runtime.NumCPU()
	return PoolConfig{
		MaxWorkers:    n,
		CoreWorkers:   max(n-1, 1),
		QueueCapacity: 100,
		KeepAlive:     20 * time.Millisecond,
	}
}

// Validate returns a *ConfigError for the first invalid field, or nil.
func (c PoolConfig) Validate() error {
	switch {
	case c.MaxWorkers < 1:
		return &ConfigError{Field: "MaxWorkers", Value: c.MaxWorkers, Rule: "must be >= 1"}
	case c.CoreWorkers < 0:
		return &ConfigError{Field: "CoreWorkers", Value: c.CoreWorkers, Rule: "must be >= 0"}
	case c.CoreWorkers > c.MaxWorkers:
		return &ConfigError{Field: "CoreWorkers", Value: c.CoreWorkers, Rule: fmt.Sprintf("must be <= MaxWorkers (%d)", c.MaxWorkers)}
	case c.QueueCapacity < 0:
		return &ConfigError{Field: "QueueCapacity", Value: c.QueueCapacity, Rule: "must be >= 0"}
	case c.KeepAlive < 0:
		return &ConfigError{Field: "KeepAlive", Value: c.KeepAlive, Rule: "must be >= 0"}
	case c.MaxQueueWait < 0:
		return &ConfigError{Field: "MaxQueueWait", Value: c.MaxQueueWait, Rule: "must be >= 0"}
	}
	return nil
}

// validateFor is Validate with the pool's name in the error.
func (c PoolConfig) validateFor(name string) error {
	err := c.Validate()
	var ce *ConfigError
	if errors.As(err, &ce) {
		ce.Name = name
	}
	return err
}
