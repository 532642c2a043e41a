package flowable

import (
	"fmt"
	"math"
	"sync/atomic"
)

type publisherFunc[T any] func(s Subscriber[T])

func (f publisherFunc[T]) Subscribe(s Subscriber[T]) {
	if s == nil {
		panic("flowable: Subscribe called with a nil Subscriber (rule 1.9)")
	}
	f(s)
}

// Just returns a Publisher that emits vs in order, as requested, then
// completes. Each subscription replays all of vs.
func Just[T any](vs ...T) Publisher[T] { return FromSlice(vs) }

// FromSlice returns a Publisher that emits the elements of items in order, as
// requested, then completes. Elements are emitted on the goroutine that calls
// Request. A Request(n <= 0), even one made inside OnNext, is signalled with
// OnError right after the OnNext in progress, instead of further elements (rule
// 3.9); Range and Just behave the same. items is not copied: do not modify it
// while subscribed.
func FromSlice[T any](items []T) Publisher[T] {
	return pullPublisher[T]{n: len(items), at: func(i int) T { return items[i] }}
}

// Range returns a Publisher that emits the count integers start,
// start+1, ..., start+count-1 as requested, then completes. It panics if
// count is negative or the last value overflows int.
func Range(start, count int) Publisher[int] {
	if count < 0 {
		panic(fmt.Sprintf("flowable: Range: count must be >= 0, got %d", count))
	}
	if count > 0 && start > math.MaxInt-(count-1) {
		panic(fmt.Sprintf("flowable: Range(%d, %d): last value overflows int", start, count))
	}
	return pullPublisher[int]{n: count, at: func(i int) int { return start + i }}
}

// Empty returns a Publisher that completes at once, without demand. A
// Request(n <= 0) made inside OnSubscribe is signalled with OnError instead
// (rule 3.9), a Cancel made there suppresses the signal, and later calls do
// nothing.
func Empty[T any]() Publisher[T] {
	return publisherFunc[T](func(s Subscriber[T]) { signalAtOnce(s, nil) })
}

// Error returns a Publisher that signals err at once, without demand. A
// Request(n <= 0) made inside OnSubscribe is signalled with the rule 3.9
// error instead, a Cancel made there suppresses the signal, and later calls
// do nothing. It panics if err is nil.
func Error[T any](err error) Publisher[T] {
	if err == nil {
		panic("flowable: Error called with a nil error")
	}
	return publisherFunc[T](func(s Subscriber[T]) { signalAtOnce(s, err) })
}

// signalAtOnce hands s a terminalSubscription, then signals err (nil:
// OnComplete), or the rule 3.9 error of a Request(n <= 0) that s made inside
// OnSubscribe, the only Request that can precede the terminal signal, or
// nothing if s cancelled there.
func signalAtOnce[T any](s Subscriber[T], err error) {
	sub := &terminalSubscription{}
	s.OnSubscribe(sub)
	if sub.ended.Swap(true) {
		return // cancelled inside OnSubscribe
	}
	switch b := sub.bad.Load(); {
	case b != 0:
		s.OnError(badErr(b))
	case err != nil:
		s.OnError(err)
	default:
		s.OnComplete()
	}
}

// Never returns a Publisher that never signals anything after OnSubscribe
// (except OnError for a Request(n <= 0), rule 3.9).
func Never[T any]() Publisher[T] {
	return publisherFunc[T](func(s Subscriber[T]) {
		s.OnSubscribe(&neverSubscription[T]{down: s})
	})
}

// Defer returns a Publisher that calls factory for each subscription and
// subscribes to the Publisher it returns. If factory returns nil, the
// subscriber gets OnSubscribe then OnError naming the problem.
func Defer[T any](factory func() Publisher[T]) Publisher[T] {
	if factory == nil {
		panic("flowable: Defer called with a nil factory")
	}
	return publisherFunc[T](func(s Subscriber[T]) {
		p := factory()
		if p == nil {
			Error[T](errDeferNil).Subscribe(s)
			return
		}
		p.Subscribe(s)
	})
}

var errDeferNil = fmt.Errorf("flowable: Defer: factory returned a nil Publisher")

// terminalSubscription is the Subscription of Empty and Error, which signal
// at once after OnSubscribe. A Request(n <= 0) made before that signal is
// recorded in bad (as n-1, see badRequest) and signalled instead of it; a
// Cancel made before it sets ended, which suppresses it; every call after
// it is a no-op (rule 3.6).
type terminalSubscription struct {
	ended atomic.Bool // the signal was decided, or Cancel came first
	bad   atomic.Int64
}

func (s *terminalSubscription) Request(n int64) {
	if n <= 0 && !s.ended.Load() {
		badRequest(&s.bad, n)
	}
}

func (s *terminalSubscription) Cancel() { s.ended.Store(true) }

type neverSubscription[T any] struct {
	down Subscriber[T]
	done atomic.Bool
}

func (s *neverSubscription[T]) Request(n int64) {
	if n <= 0 && s.done.CompareAndSwap(false, true) {
		s.down.OnError(badErr(n - 1))
	}
}

func (s *neverSubscription[T]) Cancel() { s.done.Store(true) }
