package flowable

import (
	"context"
	"sync"

	"github.com/rxbulkhead/bulkhead/internal/permit"
	"github.com/rxbulkhead/bulkhead/pool"
)

// FromPool returns a Publisher of one element: the value of fn, run on p
// once per subscription (pool.Submit). A blocking fn blocks a worker of
// p, never the subscriber.
//
// Subscribe calls OnSubscribe, then submits fn at once; the value is delivered
// (OnNext, then OnComplete) when fn has returned and at least one element has
// been requested, on whichever goroutine made the second of those happen (the
// pool's worker or the one calling Request). An error of fn, a rejection
// (*bulkhead.FullError, pool.ErrClosed) or a panic (*pool.PanicError) is
// signalled with OnError without waiting for demand. A subscriber that leaves
// OnNext with runtime.Goexit gets an OnError naming it instead of OnComplete (so
// Bulkhead gives its permit back when the value was delivered on the worker).
// Cancel withdraws a queued task (fn never runs) or cancels the context of a
// running one; no signal follows, not even the OnComplete after a Cancel made
// inside OnNext. Request(n <= 0) signals OnError citing rule 3.9 and cancels the
// task.
//
// FromPool panics if p or fn is nil; Subscribe panics if s is nil.
func FromPool[T any](p *pool.Pool, fn func(ctx context.Context) (T, error)) Publisher[T] {
	if p == nil {
		panic("flowable: FromPool called with a nil *pool.Pool")
	}
	if fn == nil {
		panic("flowable: FromPool called with a nil func")
	}
	return publisherFunc[T](func(s Subscriber[T]) {
		ctx, cancel := context.WithCancel(context.Background())
		sub := &poolSubscription[T]{down: s, cancel: cancel}
		s.OnSubscribe(sub)
		f := pool.Submit(ctx, p, fn) // if cancelled already, ctx is done: fn never runs
		f.OnDone(sub.result)
	})
}

// poolSubscription delivers the single outcome of a FromPool task. Under mu
// it records demand and the outcome; the goroutine that completes the pair
// (value and demand, or any error) sets done and signals outside mu, so
// exactly one terminal sequence is delivered, serially (rule 1.3).
type poolSubscription[T any] struct {
	down   Subscriber[T]
	cancel context.CancelFunc

	mu        sync.Mutex
	requested bool // Request(n > 0) was called
	ready     bool // fn returned a value
	value     T    // valid once ready
	done      bool // a terminal signal was delivered, or Cancel was called
	cancelled bool // Cancel was called: emit skips OnComplete after OnNext
}

// Request records demand; the first positive one releases a ready value.
func (s *poolSubscription[T]) Request(n int64) {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return
	}
	if n <= 0 {
		s.done = true
		s.mu.Unlock()
		s.cancel()
		s.down.OnError(permit.NonPositiveRequestError(n))
		return
	}
	s.requested = true
	if !s.ready {
		s.mu.Unlock()
		return
	}
	s.done = true
	v := s.value
	s.mu.Unlock()
	s.emit(v)
}

// Cancel withdraws or cancels the task; nothing is signalled afterwards.
func (s *poolSubscription[T]) Cancel() {
	s.mu.Lock()
	s.done, s.cancelled = true, true
	s.mu.Unlock()
	s.cancel()
}

// result is the Future's callback: it runs on the pool's worker, or on the
// subscribing goroutine when the task was rejected or withdrawn at once.
func (s *poolSubscription[T]) result(v T, err error) {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		s.cancel()
		return
	}
	if err != nil {
		s.done = true
		s.mu.Unlock()
		s.cancel()
		s.down.OnError(err)
		return
	}
	s.ready, s.value = true, v
	if !s.requested {
		s.mu.Unlock()
		return
	}
	s.done = true
	s.mu.Unlock()
	s.emit(v)
}

// emit delivers the value, then OnComplete unless the subscriber cancelled
// inside OnNext (no signal follows a Cancel). If the subscriber leaves
// OnNext with runtime.Goexit (on the pool's worker, no Request of its own
// unwinds), emit signals OnError(errSubscriberGoexit) instead, unless it
// cancelled first; a panic in OnNext goes on.
func (s *poolSubscription[T]) emit(v T) {
	s.cancel()
	inNext := true
	defer func() {
		if !inNext {
			return
		}
		if r := recover(); r != nil {
			panic(r) // OnNext panicked: it goes on
		}
		s.mu.Lock()
		cancelled := s.cancelled
		s.mu.Unlock()
		if !cancelled {
			s.down.OnError(errSubscriberGoexit)
		}
	}()
	s.down.OnNext(v)
	inNext = false
	s.mu.Lock()
	cancelled := s.cancelled
	s.mu.Unlock()
	if !cancelled {
		s.down.OnComplete()
	}
}
