package completable

// Observer receives the signals of one subscription to a Completable:
// OnSubscribe first and exactly once, then at most one of OnComplete or
// OnError. Signals are serial: no two calls overlap.
type Observer interface {
	// OnSubscribe hands the observer the Disposable of its subscription
	// before any other signal. The observer may dispose it at once.
	OnSubscribe(d Disposable)
	// OnComplete signals that the call ran to its end successfully.
	OnComplete()
	// OnError signals that the call failed with err (never nil).
	OnError(err error)
}

// Disposable ends one subscription. Both methods are safe for concurrent
// use.
type Disposable interface {
	// Dispose ends the subscription: the observer is not signalled after
	// Dispose returns, unless a terminal signal had already been decided.
	// It is idempotent.
	Dispose()
	// IsDisposed reports whether Dispose ended the subscription (false
	// when the subscription terminated first).
	IsDisposed() bool
}

// Completable is a deferred call that produces no value, only completion or
// an error: "send this document", "ack this message". Nothing happens until
// it is subscribed, and each Subscribe starts the call afresh.
type Completable interface {
	// Subscribe starts a new subscription. It calls o.OnSubscribe before it
	// returns and before any other signal. It panics if o is nil.
	Subscribe(o Observer)
}

// nilObserver is the panic message of Subscribe(nil), after Reactive
// Streams rule 1.9 which the Completable contract borrows.
const nilObserver = "completable: Subscribe called with a nil Observer (rule 1.9: the observer must not be nil)"
