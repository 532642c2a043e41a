package flowable

import (
	"math"
	"sync"
	"sync/atomic"
)

// Emitter is what Create hands to its producer. Its methods may be called
// from any goroutine, but Next, TryNext, Error and Complete must be called
// serially (one at a time), as the Subscriber methods they drive.
type Emitter[T any] interface {
	// Next waits until the subscriber has requested an element, delivers v
	// and returns true. It returns false, without delivering v, if the
	// subscription ended first (Done is closed). It blocks: call it from the
	// producer's own goroutine, not from the one calling Subscribe.
	Next(v T) bool
	// TryNext delivers v if an element is requested and reports whether it
	// did. It never blocks.
	TryNext(v T) bool
	// Error ends the subscription with OnError(err); later calls do nothing.
	// It panics if err is nil (a programmer error), leaving the
	// subscription as it was.
	Error(err error)
	// Complete ends the subscription with OnComplete; later calls do
	// nothing.
	Complete()
	// Requested returns the outstanding demand (math.MaxInt64: unbounded).
	Requested() int64
	// Done is closed when the subscription ends: the subscriber cancelled,
	// the producer called Error or Complete, or the subscriber violated rule
	// 3.9 (it then got OnError).
	Done() <-chan struct{}
}

// Create returns a Publisher whose elements are produced by produce, called
// once per subscription, on the subscribing goroutine, right after
// OnSubscribe. produce may return at once and keep e to emit later from
// another goroutine; it must not block the subscribing goroutine waiting for
// demand (Next blocks: call it from a goroutine of its own).
//
// The emitter honours demand (nothing is delivered that was not requested)
// and cancellation (Next and TryNext return false, Done is closed). A
// Request(n <= 0) ends the subscription with OnError (rule 3.9), serially
// with the producer's signals.
func Create[T any](produce func(e Emitter[T])) Publisher[T] {
	if produce == nil {
		panic("flowable: Create called with a nil producer")
	}
	return publisherFunc[T](func(s Subscriber[T]) {
		e := &emitter[T]{down: s, done: make(chan struct{}), wake: make(chan struct{}, 1)}
		s.OnSubscribe(e)
		produce(e)
	})
}

// emitter serialises the producer's signals with the error of a bad Request
// (the only signal another goroutine can cause) through wip, a half
// serializer: a signal is delivered by the goroutine that moves wip from 0;
// a terminal signal that finds it busy is stored in term and delivered by
// the busy goroutine when it leaves. terminated (a CAS) admits one terminal
// signal.
type emitter[T any] struct {
	down Subscriber[T]

	requested  atomic.Int64
	wip        atomic.Int32
	terminated atomic.Bool
	term       error // the terminal signal: nil means OnComplete; written before wip.Add
	closeOnce  sync.Once
	done       chan struct{}
	wake       chan struct{} // a token after each Request, for Next
}

// Request adds n to the demand; n <= 0 ends the subscription with OnError.
func (e *emitter[T]) Request(n int64) {
	if n <= 0 {
		e.terminate(badErr(n - 1))
		return
	}
	addDemand(&e.requested, n)
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Cancel ends the subscription without a signal.
func (e *emitter[T]) Cancel() {
	e.terminated.Store(true)
	e.close()
}

func (e *emitter[T]) close() { e.closeOnce.Do(func() { close(e.done) }) }

func (e *emitter[T]) Requested() int64      { return e.requested.Load() }
func (e *emitter[T]) Done() <-chan struct{} { return e.done }
func (e *emitter[T]) Complete()             { e.terminate(nil) }

func (e *emitter[T]) Error(err error) {
	if err == nil {
		panic("flowable: Emitter.Error called with a nil error")
	}
	e.terminate(err)
}

func (e *emitter[T]) TryNext(v T) bool {
	if e.terminated.Load() {
		return false
	}
	for {
		r := e.requested.Load()
		if r == 0 {
			return false
		}
		if r == math.MaxInt64 || e.requested.CompareAndSwap(r, r-1) {
			break
		}
	}
	if !e.wip.CompareAndSwap(0, 1) {
		return false // a terminal signal is being delivered
	}
	delivered := !e.terminated.Load()
	if delivered {
		e.down.OnNext(v)
	}
	if e.wip.Add(-1) != 0 {
		e.deliverTerminal() // a bad Request arrived during OnNext
	}
	return delivered
}

func (e *emitter[T]) Next(v T) bool {
	for {
		if e.TryNext(v) {
			return true
		}
		if e.terminated.Load() {
			return false
		}
		select {
		case <-e.wake:
		case <-e.done:
			return false
		}
	}
}

func (e *emitter[T]) terminate(err error) {
	if !e.terminated.CompareAndSwap(false, true) {
		return
	}
	e.term = err
	if e.wip.Add(1) == 1 {
		e.deliverTerminal()
	}
}

func (e *emitter[T]) deliverTerminal() {
	e.close()
	if e.term != nil {
		e.down.OnError(e.term)
	} else {
		e.down.OnComplete()
	}
}
