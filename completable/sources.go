package completable

import (
	"context"
	"errors"
)

// FromFunc returns a Completable that runs f on a new goroutine for each
// subscription and signals OnComplete when f returns nil, OnError with its
// error otherwise. Subscribe never blocks.
//
// f's context ends when the subscription is disposed; f should then return
// promptly (its result is dropped). If the observer disposes inside
// OnSubscribe, f does not run. f runs on a goroutine of its own so that
// Dispose can reach it from the subscribing goroutine, and so that a
// Bulkhead that grants a permit on the goroutine of another call's release
// never runs f there. If f calls runtime.Goexit, the observer gets
// OnError(ErrGoexit); a panic in f is not recovered (it ends the program,
// as any panic in a goroutine does). FromFunc panics if f is nil.
func FromFunc(f func(ctx context.Context) error) Completable {
	if f == nil {
		panic("completable: FromFunc called with a nil func")
	}
	return funcCompletable{f}
}

type funcCompletable struct {
	f func(ctx context.Context) error
}

func (c funcCompletable) Subscribe(o Observer) {
	subscribeCancellable(o, func(ctx context.Context, cancel context.CancelFunc, s *subscription) {
		go func() {
			defer cancel()
			returned := false
			defer func() {
				if returned {
					return
				}
				if r := recover(); r != nil {
					panic(r) // f panicked: it goes on, and ends the program
				}
				s.finish(o, ErrGoexit) // f called runtime.Goexit
			}()
			err := c.f(ctx)
			returned = true
			s.finish(o, err)
		}()
	})
}

// ErrGoexit is the error FromFunc signals when its func calls
// runtime.Goexit (t.FailNow in a test, for instance) instead of returning.
var ErrGoexit = errors.New("completable: the FromFunc func called runtime.Goexit instead of returning")

// subscribeCancellable signals OnSubscribe with a subscription whose Dispose
// cancels ctx, then calls start unless the observer disposed it inside
// OnSubscribe. start must call cancel once the call has ended. It panics if
// o is nil (rule 1.9).
func subscribeCancellable(o Observer, start func(ctx context.Context, cancel context.CancelFunc, s *subscription)) {
	if o == nil {
		panic(nilObserver)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &subscription{cancel: cancel}
	o.OnSubscribe(s)
	if s.IsDisposed() {
		cancel() // already cancelled by Dispose; keeps vet's lostcancel quiet
		return
	}
	start(ctx, cancel, s)
}

// Complete returns a Completable that signals OnComplete at once, on the
// subscribing goroutine, unless the observer disposes inside OnSubscribe.
func Complete() Completable { return done{} }

// Error returns a Completable that signals OnError(err) at once, on the
// subscribing goroutine, unless the observer disposes inside OnSubscribe.
// It panics if err is nil.
func Error(err error) Completable {
	if err == nil {
		panic("completable: Error called with a nil error")
	}
	return done{err}
}

// done is the Completable of Complete (err == nil) and Error.
type done struct{ err error }

func (c done) Subscribe(o Observer) {
	if o == nil {
		panic(nilObserver)
	}
	s := &subscription{}
	o.OnSubscribe(s)
	s.finish(o, c.err)
}
