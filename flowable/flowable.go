package flowable

// Subscription is the link between one Subscriber and its Publisher
// (Reactive Streams §3).
type Subscription interface {
	// Request adds n > 0 to the demand. n <= 0 makes the publisher signal
	// OnError (rule 3.9). Cumulative demand saturates at math.MaxInt64
	// (rule 3.17), which means "unbounded".
	Request(n int64)
	// Cancel asks the publisher to stop signalling; it is idempotent.
	Cancel()
}

// Subscriber receives the signals of one subscription: OnSubscribe once,
// then at most as many OnNext as requested, then at most one of OnError or
// OnComplete. Signals are serial (rule 1.3).
type Subscriber[T any] interface {
	OnSubscribe(s Subscription)
	OnNext(v T)
	OnError(err error)
	OnComplete()
}

// Publisher is a source of elements that Subscribers subscribe to.
type Publisher[T any] interface {
	// Subscribe starts a new subscription. It panics if s is nil (rule 2.13).
	Subscribe(s Subscriber[T])
}
