package redis

import (
	"context"

	"github.com/rxbulkhead/bulkhead"
)

// ChangeConfig stores cfg.MaxConcurrentCalls in Redis as the fleet limit
// of this bulkhead's name, for every replica: every script reads the
// stored limit, so it applies fleet-wide from the next round trip of any
// replica on, whatever each replica was configured with; a message on the
// release channel makes every replica read it at once (its Config,
// Metrics and FailOver semaphore follow) and wakes the waiters a raised
// limit admits. A lowered limit takes no permit back: calls in flight
// above it finish normally, and nobody is admitted until the fleet is
// below it. The other fields of cfg must equal the current ones (they are
// per process); ChangeConfig fails with a *bulkhead.ConfigError otherwise,
// or with a *StoreError if Redis does not take the change (one round trip,
// bounded by StoreConfig.Timeout and ctx). Given a ctx that has already
// ended (cancelled, or past its deadline), it fails at once, sending
// nothing, with an error that wraps ctx.Err() and is not a *StoreError;
// if ctx ends during the round trip, the error wraps ctx.Err() as well,
// and Redis may or may not have taken the change. Once the Store is
// closed, or the bulkhead evicted from its Registry, ChangeConfig fails
// with an error matching ErrClosed and sends nothing (an evicted
// bulkhead's keys are left to expire; change the limit through the
// Registry's bulkhead of that name); a ChangeConfig racing Close may or may
// not have sent the change. It panics if ctx is nil.
func (b *Bulkhead) ChangeConfig(ctx context.Context, cfg Config) error {
	if ctx == nil {
		panic("redis: ChangeConfig called with a nil context")
	}
	if err := b.closedErr(); err != nil {
		return err
	}
	if err := cfg.validateFor(b.name); err != nil {
		return err
	}
	cur := b.cfg
	cur.MaxConcurrentCalls = cfg.MaxConcurrentCalls
	if cur != cfg {
		return &bulkhead.ConfigError{Name: b.name, Field: "Config", Value: cfg,
			Rule: "only MaxConcurrentCalls (the fleet limit, stored in Redis) can change on a fleet bulkhead"}
	}
	if err := ctx.Err(); err != nil {
		return contextEnded(b.name, "ChangeConfig", err)
	}
	s := b.s
	err := s.bounded(ctx, nil, func(ctx context.Context) error {
		return changeScript.Run(ctx, s.client, b.keys.list, cfg.MaxConcurrentCalls, b.keys.channel, configPayload+b.name).Err()
	})
	if err != nil {
		if cerr := endedDuring(ctx, b.name, "ChangeConfig", " (Redis may have taken the change)", err); cerr != nil {
			return cerr
		}
		return &StoreError{Name: b.name, Unreachable: unreachable(err), Err: err}
	}
	b.mu.Lock()
	changed := b.setLimitLocked(cfg.MaxConcurrentCalls)
	b.wake = b.wake || b.ticketed > 0
	b.mu.Unlock()
	if changed {
		b.limitChanged()
	}
	s.kick()
	return nil
}

// closedErr returns the error of a call on a closed Store's bulkhead, or
// on one evicted from its Registry, and nil while the bulkhead is live.
func (b *Bulkhead) closedErr() error {
	if b.s.closed.Load() {
		return b.errs().closed
	}
	b.mu.Lock()
	closed, retired := b.closed, b.retired
	b.mu.Unlock()
	switch {
	case closed:
		return b.errs().closed
	case retired:
		return b.errs().evicted
	}
	return nil
}

// setLimitLocked records the fleet limit read from Redis and reports
// whether it changed.
func (b *Bulkhead) setLimitLocked(limit int) bool {
	if limit <= 0 || limit == b.limit {
		return false
	}
	b.limit = limit
	return true
}

// limitChanged resizes the FailOver semaphore to LocalFraction of the new
// fleet limit (not under mu).
func (b *Bulkhead) limitChanged() {
	if b.local == nil {
		return
	}
	b.mu.Lock()
	c := b.cfg
	c.MaxConcurrentCalls = b.limit
	b.mu.Unlock()
	lc := b.local.Config()
	lc.MaxConcurrentCalls = c.localLimit()
	_ = b.local.ChangeConfig(lc) // valid: the same config with another limit >= 1
}

func (b *Bulkhead) setRefresh() {
	b.mu.Lock()
	b.refresh = true
	b.wake = b.wake || b.ticketed > 0
	b.mu.Unlock()
}
