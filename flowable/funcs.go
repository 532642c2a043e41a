package flowable

import "errors"

// errSubscriberGoexit is the OnError of a subscription whose source emits on
// a goroutine of its own (FromObservable's pump, FromPool's worker) when the
// subscriber left OnNext with runtime.Goexit: that ended the source's
// goroutine (or call), not one of the subscriber's, so the source ends the
// subscription itself, and an operator downstream (Bulkhead) gives its
// permit back.
var errSubscriberGoexit = errors.New("flowable: the subscriber left OnNext with runtime.Goexit; the source ended the subscription")

// Funcs is a Subscriber made of funcs; a nil func ignores its signal.
//
// OnSubscribe calls Start if it is set, which decides the demand (keep the
// Subscription to request more or cancel); if Start is nil it requests
// Unbounded. The funcs are called serially, as the Publisher signals.
type Funcs[T any] struct {
	Start    func(s Subscription)
	Next     func(v T)
	Error    func(err error)
	Complete func()
}

// OnSubscribe calls f.Start, or requests Unbounded if it is nil.
func (f Funcs[T]) OnSubscribe(s Subscription) {
	if f.Start != nil {
		f.Start(s)
		return
	}
	s.Request(Unbounded)
}

// OnNext calls f.Next.
func (f Funcs[T]) OnNext(v T) {
	if f.Next != nil {
		f.Next(v)
	}
}

// OnError calls f.Error.
func (f Funcs[T]) OnError(err error) {
	if f.Error != nil {
		f.Error(err)
	}
}

// OnComplete calls f.Complete.
func (f Funcs[T]) OnComplete() {
	if f.Complete != nil {
		f.Complete()
	}
}
