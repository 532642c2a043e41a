package adaptive

import "github.com/rxbulkhead/bulkhead"

var _ bulkhead.CallTimer = (*Bulkhead)(nil)

// StartCall implements bulkhead.CallTimer, for the operators: the start of
// a call whose permit AcquirePermissionAsync just granted
// (Semaphore.StartCall).
func (b *Bulkhead) StartCall() bulkhead.CallStart { return b.sem.StartCall() }

// FinishCallStarted implements bulkhead.CallTimer: it is FinishCall, and
// the CallFinished event carries the call's duration from start.
func (b *Bulkhead) FinishCallStarted(start bulkhead.CallStart) {
	b.finish(finishPlain, nil, start)
}
