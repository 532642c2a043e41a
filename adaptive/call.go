package adaptive

import (
	"context"
	"errors"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// Call is one call granted through Acquire or TryAcquire. Give it back
// exactly once, with Finish if it ran or Release if it did not; the zero
// Call is not usable. Giving back more permits than the Bulkhead granted
// (a Call finished twice) panics as the Semaphore's over-release does, and
// the controller counts nothing of it (no sample, no change in flight).
type Call struct {
	b        *Bulkhead
	start    time.Duration
	inFlight int                // calls in flight at the grant, this one included
	cs       bulkhead.CallStart // for the CallDuration of its CallFinished
}

// TryAcquire takes a permit if one is free and nobody waits (see
// Semaphore.TryAcquirePermission). A refusal counts as a rejection.
func (b *Bulkhead) TryAcquire() (Call, bool) {
	if b.watched {
		ok := b.sem.TryAcquirePermission()
		return Call{b: b, cs: b.sem.StartCall()}, ok
	}
	if !b.sem.TryAcquirePermission() {
		b.countRejected()
		return Call{}, false
	}
	cs := b.sem.StartCall()
	start, n := b.granted(false)
	return Call{b: b, start: start, inFlight: n, cs: cs}, true
}

// Acquire blocks until a permit is granted, the call is rejected (a
// *bulkhead.FullError, counted as a rejection) or ctx ends (ctx.Err()), as
// Semaphore.AcquirePermission does.
func (b *Bulkhead) Acquire(ctx context.Context) (Call, error) {
	if b.watched {
		err := b.sem.AcquirePermission(ctx)
		return Call{b: b, cs: b.sem.StartCall()}, err
	}
	if err := b.sem.AcquirePermission(ctx); err != nil {
		if errors.Is(err, bulkhead.ErrBulkheadFull) {
			b.countRejected()
		}
		return Call{}, err
	}
	cs := b.sem.StartCall()
	start, n := b.granted(false)
	return Call{b: b, start: start, inFlight: n, cs: cs}, nil
}

// Finish gives the permit back after the call ran and records its RTT.
// err is the call's outcome: an error that Config.IsOverload accepts marks
// the window as dropped; any other error, or nil, is a normal sample
// (IsOverload is not called for nil). If IsOverload, the Algorithm or the
// OnFloor listener panics, the panic goes on to the caller of Finish once
// the permit is back.
func (c Call) Finish(err error) {
	c.b.finish(func(b *Bulkhead, now time.Duration) {
		b.w.add(now - c.start)
		b.w.callInFlight = c.inFlight
	}, err, c.cs)
}

// Release gives the permit back when the call did not run: no sample.
func (c Call) Release() {
	if c.b.watched {
		c.b.ReleasePermission()
		return
	}
	var changed bool
	defer func() {
		if changed {
			defer c.b.apply()
		}
		c.b.sem.ReleasePermission()
	}()
	c.b.returned(nil, nil, &changed)
}
