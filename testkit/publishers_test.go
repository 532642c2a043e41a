package testkit_test

import (
	"errors"
	"fmt"
	"sync"

	"github.com/rxbulkhead/bulkhead/flowable"
)

// Tiny publishers for the testkit's own tests; the real sources live in the
// flowable package.

// sliceSource emits its values as demand allows, then completes (or fails
// with err). It is synchronous: values are emitted on the goroutine that
// calls Request, with a drain loop so nested requests do not recurse.
type sliceSource[T any] struct {
	values []T
	err    error
}

func (p sliceSource[T]) Subscribe(s flowable.Subscriber[T]) {
	if s == nil {
		panic("sliceSource: nil subscriber (rule 1.9)")
	}
	sub := &sliceSub[T]{src: p, dst: s}
	s.OnSubscribe(sub)
	if len(p.values) == 0 {
		sub.Request(1) // terminate at once even without demand
	}
}

type sliceSub[T any] struct {
	src sliceSource[T]
	dst flowable.Subscriber[T]

	mu       sync.Mutex
	demand   int64
	next     int
	emitting bool
	done     bool
}

func (s *sliceSub[T]) Request(n int64) {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return
	}
	if n <= 0 {
		s.done = true
		s.mu.Unlock()
		s.dst.OnError(fmt.Errorf("rule 3.9: Request(%d)", n))
		return
	}
	s.demand += n
	if s.demand < 0 {
		s.demand = 1<<63 - 1
	}
	if s.emitting {
		s.mu.Unlock()
		return
	}
	s.emitting = true
	for !s.done {
		if s.next == len(s.src.values) {
			s.done = true
			s.mu.Unlock()
			if s.src.err != nil {
				s.dst.OnError(s.src.err)
			} else {
				s.dst.OnComplete()
			}
			return
		}
		if s.demand == 0 {
			break
		}
		v := s.src.values[s.next]
		s.next++
		s.demand--
		s.mu.Unlock()
		s.dst.OnNext(v)
		s.mu.Lock()
	}
	s.emitting = false
	s.mu.Unlock()
}

func (s *sliceSub[T]) Cancel() {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
}

// manualPublisher hands its subscriber to the test, which signals it by hand
// (including signals that break the rules) and inspects requests and
// cancellation.
type manualPublisher[T any] struct {
	mu        sync.Mutex
	sub       flowable.Subscriber[T]
	requests  []int64
	cancelled int
}

func (p *manualPublisher[T]) Subscribe(s flowable.Subscriber[T]) {
	p.mu.Lock()
	p.sub = s
	p.mu.Unlock()
	s.OnSubscribe(manualSub[T]{p})
}

func (p *manualPublisher[T]) subscriber() flowable.Subscriber[T] {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sub
}

func (p *manualPublisher[T]) state() (requests []int64, cancelled int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int64(nil), p.requests...), p.cancelled
}

type manualSub[T any] struct{ p *manualPublisher[T] }

func (s manualSub[T]) Request(n int64) {
	s.p.mu.Lock()
	s.p.requests = append(s.p.requests, n)
	s.p.mu.Unlock()
}

func (s manualSub[T]) Cancel() {
	s.p.mu.Lock()
	s.p.cancelled++
	s.p.mu.Unlock()
}

var (
	errBoom  = errors.New("boom")
	errOther = errors.New("other")
)
