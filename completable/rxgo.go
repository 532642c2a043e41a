package completable

import (
	"context"

	"github.com/reactivex/rxgo/v2"
)

// FromObservable returns a Completable that observes src on a new goroutine
// for each subscription, ignores its items, and signals OnError with the
// first error item (and stops observing) or OnComplete when src's channel
// closes. Disposing the subscription cancels the context src is observed
// with (rxgo.WithContext) and stops reading its channel. FromObservable
// panics if src is nil.
func FromObservable(src rxgo.Observable) Completable {
	if src == nil {
		panic("completable: FromObservable called with a nil rxgo.Observable")
	}
	return observableCompletable{src}
}

type observableCompletable struct{ src rxgo.Observable }

func (c observableCompletable) Subscribe(o Observer) {
	if o == nil {
		panic(nilObserver)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &subscription{cancel: cancel}
	o.OnSubscribe(s)
	if s.IsDisposed() {
		return
	}
	go func() {
		defer cancel() // also ends src after its first error item
		items := c.src.Observe(rxgo.WithContext(ctx))
		for {
			select {
			case it, ok := <-items:
				if !ok {
					s.finish(o, nil)
					return
				}
				if it.E != nil {
					s.finish(o, it.E)
					return
				}
			case <-ctx.Done():
				return // disposed
			}
		}
	}()
}

// ToObservable returns an rxgo Observable that subscribes c afresh on each
// Observe, on the goroutine rxgo starts for the observation. It emits no
// item: its channel closes when c completes, or receives one error item and
// closes when c fails. When the observation's context (rxgo.WithContext, in
// opts or in Observe's options) ends first, the subscription is disposed and
// the channel closes. opts apply to every observation. ToObservable panics
// if c is nil.
func ToObservable(c Completable, opts ...rxgo.Option) rxgo.Observable {
	if c == nil {
		panic("completable: ToObservable called with a nil Completable")
	}
	return rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
		if ctx.Err() != nil {
			return
		}
		s := newSink()
		c.Subscribe(s)
		select {
		case err := <-s.done:
			if err != nil {
				rxgo.Error(err).SendContext(ctx, next)
			}
		case <-ctx.Done():
			s.dispose()
		}
	}}, opts...)
}

// Await subscribes c and blocks until it terminates: it returns nil when c
// completes and c's error when it fails. If ctx ends first, Await disposes
// the subscription and returns ctx.Err(); if ctx has already ended, it
// returns ctx.Err() without subscribing. Await panics if ctx or c is nil.
func Await(ctx context.Context, c Completable) error {
	if ctx == nil {
		panic("completable: Await called with a nil context")
	}
	if c == nil {
		panic("completable: Await called with a nil Completable")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s := newSink()
	c.Subscribe(s)
	select {
	case err := <-s.done:
		return err
	case <-ctx.Done():
		select {
		case err := <-s.done: // the call ended too: its result wins
			return err
		default:
		}
		s.dispose()
		return ctx.Err()
	}
}
