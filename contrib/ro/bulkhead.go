package ro

import (
	"context"

	"github.com/samber/ro"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/nilcheck"
	"github.com/rxbulkhead/bulkhead/internal/permit"
)

// Bulkhead returns an Observable that runs src under a permit of b, one
// permit per subscription (see the package documentation for the rules).
// Subscribing never blocks. Bulkhead panics if b or src is nil.
func Bulkhead[T any](b bulkhead.Bulkhead, src ro.Observable[T]) ro.Observable[T] {
	if nilcheck.Is(b) {
		panic("ro: Bulkhead called with a nil bulkhead.Bulkhead")
	}
	if src == nil {
		panic("ro: Bulkhead called with a nil source ro.Observable")
	}
	return ro.NewUnsafeObservableWithContext(func(ctx context.Context, dst ro.Observer[T]) ro.Teardown {
		s := &subscription[T]{src: src, dst: dst, ctx: ctx}
		s.Start(b, s)
		return s.Dispose
	})
}

// Transformer returns the operator that applies Bulkhead(b, src) to its
// source, for ro.Pipe:
//
//	orders := ro.Pipe2(src, bro.Transformer[Order](walmart), ro.Map(send))
//
// One partner's operator can be kept in a variable and applied to many
// pipelines. Transformer panics if b is nil.
func Transformer[T any](b bulkhead.Bulkhead) func(src ro.Observable[T]) ro.Observable[T] {
	if nilcheck.Is(b) {
		panic("ro: Transformer called with a nil bulkhead.Bulkhead")
	}
	return func(src ro.Observable[T]) ro.Observable[T] { return Bulkhead(b, src) }
}

// subscription is one subscription of a Bulkhead Observable, from the
// permit request on. Its permit.Disposable holds the acquire / withdraw /
// release state machine (the one every operator of the library shares), and
// it is the Observer it subscribes to src.
//
// Goroutines: Start runs on the subscriber's goroutine. Granted and
// Rejected run on the goroutine that decided: the subscriber's, inside
// Start, when the bulkhead answers at once; otherwise the goroutine that gave
// a permit back (inside its Release or FinishCall, in the Semaphore's
// delivery loop), or the bulkhead's timer goroutine for an expiry. Granted
// subscribes src there. No goroutine exists for a pending subscription.
//
// Permit ownership: the Disposable owns the request while pending, the
// Guard the permit once granted. It goes back exactly once: Complete on
// src's Error or Complete (before dst receives it), or, on Unsubscribe
// (the teardown, Dispose), the Guard's Release: FinishCall if a value was
// delivered, ReleasePermission if not.
type subscription[T any] struct {
	permit.Disposable
	src   ro.Observable[T]
	dst   ro.Observer[T]
	ctx   context.Context
	guard *permit.Guard // set by Granted before src is subscribed
}

var (
	_ permit.Handler   = (*subscription[int])(nil)
	_ ro.Observer[int] = (*subscription[int])(nil)
)

// Granted subscribes src with s as its observer and hands the source's
// Unsubscribe to the Disposable. A synchronous src emits everything inside
// this call. If src's SubscribeWithContext panics (an Observable not built
// by ro, which would catch it) or calls runtime.Goexit, the subscription is
// disposed, so the permit goes back, and the panic goes on.
func (s *subscription[T]) Granted(g *permit.Guard) {
	s.guard = g
	returned := false
	defer func() {
		if !returned {
			s.Dispose()
		}
	}()
	sub := s.src.SubscribeWithContext(s.ctx, s)
	returned = true
	s.SetUpstream(sub.Unsubscribe)
}

// Rejected passes the acquisition's error (a *bulkhead.FullError for a
// Semaphore) to the subscriber; src is never subscribed.
func (s *subscription[T]) Rejected(err error) { s.dst.ErrorWithContext(s.ctx, err) }

// Next forwards a value of src.
func (s *subscription[T]) Next(v T) { s.NextWithContext(s.ctx, v) }

// NextWithContext forwards a value of src; the call now counts as run.
func (s *subscription[T]) NextWithContext(ctx context.Context, v T) {
	s.guard.MarkRan()
	s.dst.NextWithContext(ctx, v)
}

// Error forwards src's error, after the permit is back.
func (s *subscription[T]) Error(err error) { s.ErrorWithContext(s.ctx, err) }

// ErrorWithContext gives the permit back (FinishCall) and forwards err.
func (s *subscription[T]) ErrorWithContext(ctx context.Context, err error) {
	s.guard.Complete()
	s.dst.ErrorWithContext(ctx, err)
}

// Complete forwards src's completion, after the permit is back.
func (s *subscription[T]) Complete() { s.CompleteWithContext(s.ctx) }

// CompleteWithContext gives the permit back (FinishCall) and forwards the
// completion.
func (s *subscription[T]) CompleteWithContext(ctx context.Context) {
	s.guard.Complete()
	s.dst.CompleteWithContext(ctx)
}

// IsClosed reports whether the subscriber is closed.
func (s *subscription[T]) IsClosed() bool { return s.dst.IsClosed() }

// HasThrown reports whether the subscriber received an error.
func (s *subscription[T]) HasThrown() bool { return s.dst.HasThrown() }

// IsCompleted reports whether the subscriber completed.
func (s *subscription[T]) IsCompleted() bool { return s.dst.IsCompleted() }
