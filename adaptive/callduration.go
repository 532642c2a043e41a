package adaptive

import (
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/callstart"
)

var _ bulkhead.CallTimer = (*Bulkhead)(nil)

// StartCall implements bulkhead.CallTimer, for the operators: the start of
// a call whose permit AcquirePermissionAsync just granted. While a
// listener is registered on the semaphore it is the semaphore's
// (Semaphore.StartCall), so that the CallFinished event carries the call's
// duration; otherwise it is the controller's own: the time of its newest
// grant. Either way it is this call's grant when StartCall follows it, or a
// later grant's of another call, as for Semaphore.StartCall.
//
// Given back with FinishCallStarted, it lets the controller time the call
// exactly, as Call.Finish does, instead of matching it with the oldest
// grant: for a controller made by New, its sample is not Matched. For one
// made by Watch the events carry the duration anyway.
func (b *Bulkhead) StartCall() bulkhead.CallStart {
	if cs := b.sem.StartCall(); cs != (bulkhead.CallStart{}) || b.watched {
		return cs
	}
	if at := b.lastGrant.Load(); at != 0 {
		return callstart.Make(&b.epoch, at)
	}
	return bulkhead.CallStart{}
}

// FinishCallStarted implements bulkhead.CallTimer: it is FinishCall for the
// call that started at start (StartCall), whose RTT it measures from start
// rather than matching the call with the oldest grant; the CallFinished
// event carries the call's duration if start is the semaphore's. The zero
// CallStart makes it FinishCall. A start the controller cannot place (one
// of another Bulkhead, which the semaphore refuses with a panic once the
// permit is back; or the semaphore's read on another clock than the one
// given with WithClock) is matched with the oldest grant.
func (b *Bulkhead) FinishCallStarted(start bulkhead.CallStart) {
	ep := callstart.Epoch(start)
	switch {
	case ep == nil || b.watched: // a watched controller learns it from the event
		b.finish(finishPlain, nil, start)
	case ep == &b.epoch: // the controller's own: the semaphore never saw it
		b.finish(func(b *Bulkhead, now time.Duration) {
			finishStarted(b, now, now-time.Duration(callstart.At(start)-1))
		}, nil, bulkhead.CallStart{})
	case ep == callstart.Epoch(b.sem.StartCall()): // the semaphore's
		b.finish(func(b *Bulkhead, now time.Duration) {
			finishStarted(b, now, callstart.Since(start, b.epoch.Add(now)))
		}, nil, start)
	default: // another's, which the semaphore refuses
		b.finish(finishPlain, nil, start)
	}
}

// finishStarted records a plain call that ran for d, as measured from its
// start; a d that cannot be this call's (negative, or longer than the
// controller has run) is matched with the oldest grant instead.
func finishStarted(b *Bulkhead, now, d time.Duration) {
	if d < 0 || d > now {
		finishPlain(b, now)
		return
	}
	finishTimed(b, now, d)
}
