package redis

import (
	"context"

	"github.com/rxbulkhead/bulkhead"
)

// Metrics returns this process's view, in the core's terms, so that
// exporters and testkit.CheckPermits work unchanged:
// MaxAllowedConcurrentCalls is the fleet limit, InFlightCalls the permits
// this process holds (leases and FailOver permits), QueuedCalls the calls
// this process queues, MaxQueuedCalls the per-process bound, and
// AvailableConcurrentCalls the fleet's free permits as of the last round
// trip. FleetMetrics asks Redis for the fleet's counts.
func (b *Bulkhead) Metrics() bulkhead.Metrics {
	b.mu.Lock()
	m := bulkhead.Metrics{
		AvailableConcurrentCalls:  max(0, b.limit-b.fleetHeld),
		MaxAllowedConcurrentCalls: b.limit,
		InFlightCalls:             b.held,
		QueuedCalls:               b.fresh + b.ticketed,
		MaxQueuedCalls:            b.cfg.MaxQueuedCalls,
	}
	b.mu.Unlock()
	if b.local != nil {
		m.QueuedCalls += b.local.Metrics().QueuedCalls
	}
	return m
}

// FleetMetrics is the state of a bulkhead across every replica.
type FleetMetrics struct {
	// MaxConcurrentCalls is the fleet limit: the one stored by ChangeConfig,
	// else this process's configured one.
	MaxConcurrentCalls int
	// InFlightCalls is the number of live leases in Redis.
	InFlightCalls int
	// QueuedCalls is the number of live tickets in Redis: calls waiting in
	// any replica.
	QueuedCalls int
	// LeasesLost counts the leases of this process that the renewal loop
	// found expired and could not add back (see Permit.Lost).
	LeasesLost int
	// LeasesRestored counts the leases of this process that the renewal
	// loop found expired (a Redis restart, a long pause) and added back.
	LeasesRestored int
}

// FleetMetrics asks Redis (one round trip) for the fleet-wide counts. It
// fails with a *StoreError; given a ctx that has already ended (cancelled,
// or past its deadline), it fails at once, sending nothing, with an error
// that wraps ctx.Err() and is not a *StoreError, and so it does if ctx
// ends during the round trip. Either way the
// FleetMetrics it returns holds this process's counts (LeasesLost,
// LeasesRestored) and its configured limit. It panics if ctx is nil.
func (b *Bulkhead) FleetMetrics(ctx context.Context) (FleetMetrics, error) {
	return b.fleetMetrics(ctx, "FleetMetrics")
}

func (b *Bulkhead) fleetMetrics(ctx context.Context, op string) (FleetMetrics, error) {
	if ctx == nil {
		panic("redis: " + op + " called with a nil context")
	}
	if err := ctx.Err(); err != nil {
		return b.localFleetMetrics(), contextEnded(b.name, op, err)
	}
	var v []int64
	err := b.s.bounded(ctx, nil, func(ctx context.Context) error {
		var err error
		v, err = statsScript.Run(ctx, b.s.client, b.keys.list, b.cfg.MaxConcurrentCalls).Int64Slice()
		for i := 0; err != nil && closedByServer(err) && ctx.Err() == nil && i <= int(b.s.client.PoolStats().TotalConns); i++ {
			// A connection the server closed (after refusing it): once
			// more on a new one, so that Check names the refusal.
			v, err = statsScript.Run(ctx, b.s.client, b.keys.list, b.cfg.MaxConcurrentCalls).Int64Slice()
		}
		return err
	})
	m := b.localFleetMetrics()
	if err != nil {
		if cerr := endedDuring(ctx, b.name, op, "", err); cerr != nil {
			return m, cerr
		}
		return m, &StoreError{Name: b.name, Unreachable: unreachable(err) && !refused(err), Err: err}
	}
	if len(v) != 3 {
		return m, &StoreError{Name: b.name, Err: errBadReply(len(v), 3)}
	}
	m.InFlightCalls, m.QueuedCalls, m.MaxConcurrentCalls = int(v[0]), int(v[1]), int(v[2])
	return m, nil
}

// Check makes one round trip that touches every key of the bulkhead, so
// that wrong credentials, a missing permission or a key of another type
// surface at start-up as a *StoreError that names them. Given a ctx that
// has already ended, it fails at once as FleetMetrics does; it panics if
// ctx is nil.
func (b *Bulkhead) Check(ctx context.Context) error {
	_, err := b.fleetMetrics(ctx, "Check")
	return err
}

// localFleetMetrics is what FleetMetrics knows without Redis: this
// process's counts and its configured limit.
func (b *Bulkhead) localFleetMetrics() FleetMetrics {
	b.mu.Lock()
	defer b.mu.Unlock()
	return FleetMetrics{MaxConcurrentCalls: b.cfg.MaxConcurrentCalls, LeasesLost: b.leasesLost, LeasesRestored: b.restored}
}
