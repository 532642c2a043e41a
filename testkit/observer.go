package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/reactivex/rxgo/v2"
)

// TestObserver observes an rxgo Observable, Single or OptionalSingle (any
// rxgo.Iterable) and records what it emits: values, error items, and the
// closing of its channel. It observes with a context it owns, so Cancel ends
// the observation mid-stream the way a consumer's context would.
//
// The channel closing without an error item is completion; rxgo has no
// other completion signal. A TestObserver reads the channel on a goroutine
// of its own, which ends when the channel closes or when Cancel is called
// (it then stops reading: rxgo's operators stop on the cancelled context).
// When the channel closes, the TestObserver cancels its context, so upstream
// goroutines that an rxgo operator left behind end too. Call Cancel or Await
// before the test ends, so that no goroutine outlives the test.
//
// A TestObserver is safe for concurrent use.
type TestObserver struct {
	rec    recorder[any]
	ctx    context.Context
	cancel context.CancelFunc

	// Guarded by rec.mu.
	closed bool // the channel closed, or Cancel stopped the reading
}

// Observe starts observing src with opts and returns at once. A
// rxgo.WithContext in opts is replaced by the TestObserver's own context; use
// ObserveContext to give it a parent.
func Observe(src rxgo.Iterable, opts ...rxgo.Option) *TestObserver {
	return ObserveContext(context.Background(), src, opts...)
}

// ObserveContext is Observe with the TestObserver's context derived from
// parent: the observation also ends when parent ends.
func ObserveContext(parent context.Context, src rxgo.Iterable, opts ...rxgo.Option) *TestObserver {
	if parent == nil {
		panic("testkit: ObserveContext called with a nil context")
	}
	if src == nil {
		panic("testkit: Observe called with a nil rxgo.Iterable")
	}
	ctx, cancel := context.WithCancel(parent)
	o := &TestObserver{rec: recorder[any]{who: "TestObserver"}, ctx: ctx, cancel: cancel}
	ch := src.Observe(append(append([]rxgo.Option(nil), opts...), rxgo.WithContext(ctx))...)
	go o.read(ch)
	return o
}

// read records the items of ch until it closes or the context ends.
func (o *TestObserver) read(ch <-chan rxgo.Item) {
	for {
		select {
		case item, ok := <-ch:
			if !ok {
				o.end(false)
				return
			}
			o.rec.mu.Lock()
			if item.E != nil {
				o.rec.addLocked(signal[any]{kind: onError, err: item.E})
			} else {
				o.rec.addLocked(signal[any]{kind: onNext, value: item.V})
			}
			o.rec.mu.Unlock()
		case <-o.ctx.Done():
			o.end(true)
			return
		}
	}
}

// end records the end of the reading: completion if the channel closed
// without an error item before any cancellation. It then cancels the
// context, as a consumer that is done should: an rxgo operator that stopped
// at an error item leaves its upstream goroutines blocked until the context
// ends.
func (o *TestObserver) end(byContext bool) {
	defer o.cancel()
	o.rec.mu.Lock()
	defer o.rec.mu.Unlock()
	o.closed = true
	switch {
	case byContext:
		o.rec.cancelled = true
	case o.rec.err == nil && !o.rec.cancelled:
		o.rec.addLocked(signal[any]{kind: onComplete})
	}
	o.rec.changed.notify()
}

// Cancel cancels the observation's context. The TestObserver stops reading
// at once; values already received stay recorded. It is idempotent.
func (o *TestObserver) Cancel() {
	o.rec.mu.Lock()
	o.rec.cancelled = true
	o.rec.mu.Unlock()
	o.cancel()
}

// Await blocks until the channel closes or the observation is cancelled, or
// timeout passes (on the time package's clock: fake time inside a
// testing/synctest bubble), and reports whether the observation ended.
func (o *TestObserver) Await(timeout time.Duration) bool {
	return waitUntil(&o.rec.mu, &o.rec.changed, timeout, func() bool { return o.closed })
}

// AwaitCount blocks until n values arrived, the observation ended or timeout
// passes, and reports whether n values arrived.
func (o *TestObserver) AwaitCount(n int, timeout time.Duration) bool {
	waitUntil(&o.rec.mu, &o.rec.changed, timeout, func() bool { return len(o.rec.values) >= n || o.closed })
	o.rec.mu.Lock()
	defer o.rec.mu.Unlock()
	return len(o.rec.values) >= n
}

// Values returns a copy of the values received so far.
func (o *TestObserver) Values() []any { return o.rec.valuesCopy() }

// Err returns the first error item received, or nil.
func (o *TestObserver) Err() error { return o.rec.firstErr() }

// IsComplete reports whether the channel closed with no error item and no
// cancellation.
func (o *TestObserver) IsComplete() bool { return o.rec.isComplete() }

// IsCancelled reports whether Cancel was called or the parent context ended.
func (o *TestObserver) IsCancelled() bool {
	o.rec.mu.Lock()
	defer o.rec.mu.Unlock()
	return o.rec.cancelled
}

// String describes what was received so far, as failure messages do.
func (o *TestObserver) String() string { return o.rec.describe() }

// AssertValues checks that exactly want (compared with reflect.DeepEqual,
// so types must match: int, not int64) were received, in order. Like every
// assertion it reports a failure with t.Errorf, showing what was received,
// and returns whether it passed.
func (o *TestObserver) AssertValues(t testing.TB, want ...any) bool {
	t.Helper()
	return o.rec.assertValues(t, want)
}

// AssertNoValues checks that no value was received.
func (o *TestObserver) AssertNoValues(t testing.TB) bool {
	t.Helper()
	return o.rec.assertNoValues(t)
}

// AssertComplete checks that the channel closed without an error item and
// without a cancellation.
func (o *TestObserver) AssertComplete(t testing.TB) bool {
	t.Helper()
	return o.rec.assertComplete(t)
}

// AssertError checks that an error item was received and that the first one
// matches target by errors.Is.
func (o *TestObserver) AssertError(t testing.TB, target error) bool {
	t.Helper()
	return o.rec.assertError(t, target)
}

// AssertNotTerminated checks that no error item was received and the
// observation has not ended.
func (o *TestObserver) AssertNotTerminated(t testing.TB) bool {
	t.Helper()
	o.rec.mu.Lock()
	defer o.rec.mu.Unlock()
	if o.rec.err == nil && !o.closed {
		return true
	}
	o.rec.fail(t, "terminated, want no error and an open channel")
	return false
}

// AssertResult checks that exactly want were received and then the channel
// closed without an error item.
func (o *TestObserver) AssertResult(t testing.TB, want ...any) bool {
	t.Helper()
	ok := o.rec.assertValues(t, want)
	return o.rec.assertComplete(t) && ok
}
