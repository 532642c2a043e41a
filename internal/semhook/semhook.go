// Package semhook lets tests watch and shrink what one critical section of
// a bulkhead.Semaphore does: the size of an expiry sweep's batches (the
// waiters one critical section may reject), the moments a sweep takes and
// releases the Semaphore's lock for each batch, and each grant or expiry
// it decides there. The core's own tests use it, and so does
// internal/linearizability, which records every grant and expiry as an
// operation of its history of its own: a critical section that decides
// several outcomes (a batch, a ChangeConfig that grants several waiters)
// makes each visible at once, one after the other, to readers that take
// no lock (Err, Done), so it is not one atomic step for them.
//
// With no hooks set, as in production, a sweep or a grant pays one atomic
// load.
package semhook

import "sync/atomic"

// DefaultBatch is the batch size of a sweep when no hooks are set, or when
// Hooks.Batch is not positive: rejecting one waiter takes a few tens of
// nanoseconds, so a batch holds the lock well under a millisecond.
const DefaultBatch = 4096

// Hooks are the test hooks of every sweep and grant that starts while they
// are set. Every func may be nil.
type Hooks struct {
	// Batch, if positive, replaces DefaultBatch.
	Batch int
	// Lock is called on the sweeping goroutine right before it takes the
	// Semaphore's lock for a batch.
	Lock func()
	// Unlock is called on the sweeping goroutine right after it released
	// the lock at the end of a batch, with what the batch did.
	Unlock func(Batch)
	// Deciding and Decided bracket the decision of each waiter that a
	// grant (ReleasePermission, FinishCall, ChangeConfig, the pass of a
	// weighted Semaphore), a sweep, or a ChangeConfig's *TooHeavyError
	// rejection decides, under the Semaphore's lock: Deciding right before the
	// waiter's compare-and-swap, Decided right after its outcome was made
	// visible, with the waiter (a *bulkhead.Acquisition). A pooled
	// blocking waiter is reported too. They must not call the Semaphore.
	Deciding func()
	Decided  func(waiter any)
}

// Batch is what one batch of a sweep did.
type Batch struct {
	// Examined is how many waiters it looked at, Rejected how many it
	// rejected with WaitTimeout: at most the batch size.
	Examined, Rejected int
	// Last is set on the sweep's last batch, after which no waiter whose
	// deadline had passed when the sweep started is queued.
	Last bool
}

var current atomic.Pointer[Hooks]

// Set installs h (nil: none) for the sweeps and grants that start from now
// on, and returns a func that puts the previous hooks back.
func Set(h *Hooks) (restore func()) {
	old := current.Swap(h)
	return func() { current.Store(old) }
}

// Get returns the hooks in force (nil if none).
func Get() *Hooks { return current.Load() }

// BatchSize returns the batch size that h sets (h may be nil).
func (h *Hooks) BatchSize() int {
	if h == nil || h.Batch <= 0 {
		return DefaultBatch
	}
	return h.Batch
}

// BeforeDecision calls h.Deciding if h and it are set.
func (h *Hooks) BeforeDecision() {
	if h != nil && h.Deciding != nil {
		h.Deciding()
	}
}

// AfterDecision calls h.Decided if h and it are set.
func (h *Hooks) AfterDecision(waiter any) {
	if h != nil && h.Decided != nil {
		h.Decided(waiter)
	}
}
