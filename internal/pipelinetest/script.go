package pipelinetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ErrBoom is the error a failing Script fails with.
var ErrBoom = errors.New("boom")

// Behaviour is what a Script does when subscribed (observed): it emits one
// value (1) if Value is set (a Completable has none to emit), then stays
// open until it is cancelled if Hold is set, or else fails with Err, or
// completes.
type Behaviour struct {
	Value bool
	Hold  bool
	Err   error
}

// Script is a test source with a Behaviour that counts its subscriptions.
// A Kind builds the source of its type from it and calls Subscribed when
// the source is subscribed and Cancelled when it sees its cancellation.
type Script struct {
	Behaviour
	subscribed atomic.Int32
	cancelled  atomic.Int32
}

// Subscribed records that a subscription of the source started.
func (s *Script) Subscribed() { s.subscribed.Add(1) }

// Cancelled records that a subscription saw its cancellation.
func (s *Script) Cancelled() { s.cancelled.Add(1) }

// Run is one subscription (observation) of a wrapped source, whatever its
// type, as the table sees it.
type Run interface {
	// Cancel ends the subscription from the consumer's side (cancels the
	// context, disposes, cancels, unsubscribes).
	Cancel()
	// Result returns what the consumer received so far: the number of
	// values, the error, and whether the subscription ended (terminal
	// signal, or rxgo channel closed).
	Result() (values int, err error, ended bool)
}

// Record is the consumer-side bookkeeping a Run can embed: Value and End
// record signals, Result reads them. It is safe for concurrent use.
type Record struct {
	mu     sync.Mutex
	values int
	err    error
	ended  bool
}

// Result returns the number of values, the first error and whether End ran.
func (r *Record) Result() (int, error, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.values, r.err, r.ended
}

// Value records a value.
func (r *Record) Value() {
	r.mu.Lock()
	r.values++
	r.mu.Unlock()
}

// End records the end of the subscription with err (nil: completed).
func (r *Record) End(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.ended = true
	r.mu.Unlock()
}

// ctxDone reports the cancellation of a held source to s.
func (s *Script) hold(ctx context.Context) {
	<-ctx.Done()
	s.Cancelled()
}
