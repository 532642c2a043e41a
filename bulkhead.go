package bulkhead

import "context"

// Bulkhead is what the reactive operators depend on. *Semaphore implements
// it; FromBlocking adapts implementations that can only block.
//
// It is named like its package, as context.Context is: it is the
// package's central abstraction, and bulkhead.Bulkhead is what an
// operator's signature says it needs.
//
// Every permit granted by AcquirePermissionAsync must be given back exactly
// once: with FinishCall if the call ran, with ReleasePermission if it did not.
type Bulkhead interface {
	// Name identifies the bulkhead in errors, events and metrics.
	Name() string
	// AcquirePermissionAsync requests a permit without blocking.
	AcquirePermissionAsync() *Acquisition
	// ReleasePermission gives back a permit that was acquired but not used:
	// no CallFinished event.
	ReleasePermission()
	// FinishCall gives back a permit whose call ran: CallFinished event.
	FinishCall()
}

// BlockingBulkhead is a bulkhead whose permits can only be acquired by
// blocking, like resilience4j's Bulkhead#acquirePermission.
type BlockingBulkhead interface {
	Name() string
	// AcquirePermission blocks until a permit is granted (nil), the call is
	// rejected, or ctx ends.
	AcquirePermission(ctx context.Context) error
	ReleasePermission()
	FinishCall()
}

// FromBlocking adapts b to Bulkhead, as resilience4j's default
// acquirePermissionAsync does: each AcquirePermissionAsync runs
// b.AcquirePermission on a new goroutine, so a pending acquisition costs a
// goroutine (prefer a native Bulkhead such as *Semaphore). Cancel cancels the
// context given to b; a permit that b grants after the Acquisition was
// cancelled is given back with b.ReleasePermission.
func FromBlocking(b BlockingBulkhead) Bulkhead {
	if b == nil {
		panic("bulkhead: FromBlocking called with a nil BlockingBulkhead")
	}
	return blockingBridge{b}
}

type blockingBridge struct{ BlockingBulkhead }

// blockingWait is the owner of one pending bridged acquisition.
type blockingWait struct{ stop context.CancelFunc }

func (w blockingWait) cancel(a *Acquisition) bool {
	if !a.decide(stateCancelled, nil) {
		return false
	}
	a.settle()
	w.stop()
	a.runCallbacks()
	return true
}

func (br blockingBridge) AcquirePermissionAsync() *Acquisition {
	ctx, cancel := context.WithCancel(context.Background())
	a := &Acquisition{owner: blockingWait{cancel}}
	go func() {
		defer cancel()
		err := br.AcquirePermission(ctx)
		outcome := stateGranted
		if err != nil {
			outcome = stateRejected
		}
		// The CAS decides against a concurrent Cancel; a grant that lost is
		// given back.
		if !a.decide(outcome, err) {
			if err == nil {
				br.BlockingBulkhead.ReleasePermission()
			}
			return
		}
		a.settle()
		a.runCallbacks()
	}()
	return a
}
