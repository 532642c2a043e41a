package permit

import bulkhead "github.com/rxbulkhead/bulkhead"

// Disposable is the PermissionAwaitingDisposable of the non-backpressured
// types (Observable, Single, Maybe, Completable): it stands for one
// subscription from the moment the permit is requested.
//
// Lifecycle: Start requests a permit. While the request is pending, Dispose
// withdraws it (no permit is consumed, the source is never subscribed). Once
// granted, the Handler subscribes the source and calls SetUpstream with the
// func that disposes it; Dispose then calls that func and gives the permit
// back through the Guard (FinishCall if the call ran, ReleasePermission
// otherwise). If the grant and Dispose race, one CAS decides: a grant that
// loses gives the permit back with ReleasePermission, and an upstream set
// after Dispose is disposed at once, exactly once.
//
// The zero Disposable is ready for Start; embed it in the operator's
// subscriber to save an allocation. It must not be copied after Start.
// Dispose and IsDisposed are safe for concurrent use.
type Disposable struct {
	g gate
}

// Start requests a permit from b and reports the outcome to h (see Handler).
// It never blocks. If Dispose was called before Start, Start requests
// nothing. Start must be called at most once; it panics if b or h is nil.
func (d *Disposable) Start(b bulkhead.Bulkhead, h Handler) { d.g.start(b, h) }

// SetUpstream records dispose, the func that stops the subscribed source
// (for rxgo, the cancel func of the Observe context). It is called by the
// Handler after the grant, at most once. If the Disposable was disposed
// meanwhile, it calls dispose at once and returns false.
func (d *Disposable) SetUpstream(dispose func()) bool {
	if dispose == nil {
		panic("permit: SetUpstream called with a nil dispose func")
	}
	return d.g.setUpstream(cancelFunc(dispose))
}

// Dispose ends the subscription; it is idempotent. Pending: the acquisition
// is withdrawn (Handler.Granted and Handler.Rejected will not run). Granted:
// the upstream is disposed (now, or by SetUpstream if it is not set yet) and
// the permit given back per the Guard's rules. After a rejection it does
// nothing.
func (d *Disposable) Dispose() {
	switch d.g.cancel() {
	case stateActive:
		d.g.up.Cancel()
		d.g.guard.Release()
	case stateGranted:
		d.g.guard.Release()
	}
}

// IsDisposed reports whether Dispose was called before the subscription was
// rejected.
func (d *Disposable) IsDisposed() bool { return d.g.state.Load() == stateCancelled }
