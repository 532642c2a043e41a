package iterate

import (
	"context"
	"iter"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/nilcheck"
)

// Seq returns an iterator that ranges over seq under a permit of b, taken
// when ranging starts and given back when the loop ends (see the package
// documentation for the rules). It yields each value of seq with a nil
// error, or, when no permit was obtained, one pair of the zero value and
// the error. ctx bounds the wait for the permit.
//
// Seq panics if ctx, b or seq is nil: those are programmer errors.
func Seq[T any](ctx context.Context, b bulkhead.Bulkhead, seq iter.Seq[T]) iter.Seq2[T, error] {
	checkArgs("Seq", ctx, b, seq == nil)
	return func(yield func(T, error) bool) {
		if err := acquire(ctx, b); err != nil {
			var zero T
			yield(zero, err)
			return
		}
		p := hold(b)
		defer p.giveBack()
		for v := range seq {
			p.ran = true
			if !yield(v, nil) {
				break
			}
		}
		p.ended = true
	}
}

// Seq2 is Seq for a source that reports its own errors, an
// iter.Seq2[T, error] such as database rows or the pages of an API client.
// The source's pairs are yielded as they are; when no permit was obtained
// the only pair is the zero value and the acquisition's error. An error
// pair from the source does not change the release rules: the call ran.
//
// Seq2 panics if ctx, b or seq is nil.
func Seq2[T any](ctx context.Context, b bulkhead.Bulkhead, seq iter.Seq2[T, error]) iter.Seq2[T, error] {
	checkArgs("Seq2", ctx, b, seq == nil)
	return func(yield func(T, error) bool) {
		if err := acquire(ctx, b); err != nil {
			var zero T
			yield(zero, err)
			return
		}
		p := hold(b)
		defer p.giveBack()
		for v, err := range seq {
			p.ran = true
			if !yield(v, err) {
				break
			}
		}
		p.ended = true
	}
}

func checkArgs(fn string, ctx context.Context, b bulkhead.Bulkhead, nilSeq bool) {
	switch {
	case ctx == nil:
		panic("iterate: " + fn + " called with a nil context.Context (use context.Background())")
	case nilcheck.Is(b):
		panic("iterate: " + fn + " called with a nil bulkhead.Bulkhead")
	case nilSeq:
		panic("iterate: " + fn + " called with a nil source iterator")
	}
}

// held is a permit held by one loop; only the ranging goroutine uses it.
type held struct {
	b     bulkhead.Bulkhead
	ran   bool               // the loop body received a value
	ended bool               // the source returned (no panic)
	start bulkhead.CallStart // the loop's start, if b is a bulkhead.CallTimer
}

// hold returns the permit just granted by b, with the loop's start.
func hold(b bulkhead.Bulkhead) held {
	p := held{b: b}
	if t, ok := b.(bulkhead.CallTimer); ok {
		p.start = t.StartCall()
	}
	return p
}

// giveBack runs deferred, also while a panic or runtime.Goexit unwinds: FinishCall if the
// source ended or the body received a value (with the loop's duration,
// FinishCallStarted, if b is a bulkhead.CallTimer), ReleasePermission
// otherwise.
func (p *held) giveBack() {
	if p.ended || p.ran {
		if t, ok := p.b.(bulkhead.CallTimer); ok && p.start != (bulkhead.CallStart{}) {
			t.FinishCallStarted(p.start)
			return
		}
		p.b.FinishCall()
		return
	}
	p.b.ReleasePermission()
}

// acquire blocks until b grants a permit (nil), rejects the call (the
// rejection error) or ctx ends (ctx.Err(), the request withdrawn). A b that
// can block itself (a *bulkhead.Semaphore) does so: its AcquirePermission
// has the same outcomes, waits with a pooled record, and publishes the
// grant before it returns, so the loop's StartCall finds it.
//
// Any other b is waited for through a callback of the Acquisition, not its
// Done channel: Done is closed as soon as the outcome is decided, before
// the deciding goroutine has published the grant (the CallPermitted whose
// time a CallTimer's StartCall returns), and the callbacks run after it.
// Woken by Done, the loop could start its call from an older grant's
// stamp, and publish its CallFinished before its CallPermitted.
//
// Ownership: a permit granted while ctx ends belongs to the caller of
// Cancel that lost the race, which gives it back unused.
func acquire(ctx context.Context, b bulkhead.Bulkhead) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if bb, ok := b.(bulkhead.BlockingBulkhead); ok {
		return bb.AcquirePermission(ctx)
	}
	a := b.AcquirePermissionAsync()
	if err := a.Err(); err != bulkhead.ErrPending {
		return err
	}
	decided := make(chan error, 1)
	a.OnDone(func(err error) { decided <- err })
	select {
	case err := <-decided:
		return err
	case <-ctx.Done():
		if a.Cancel() {
			return ctx.Err()
		}
		if <-decided == nil { // decided first: wait until it is published
			b.ReleasePermission()
		}
		return ctx.Err()
	}
}
