package flowable_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rxbulkhead/bulkhead/flowable"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// defaultTestTimeout bounds waits for asynchronous signals; it only expires
// when a test fails.
const defaultTestTimeout = 10 * time.Second

// recorder is a Subscriber that records every signal and checks the rules a
// Publisher must follow towards it: OnSubscribe first and once, signals
// never overlap (1.3), nothing after a terminal signal, no more OnNext than
// requested.
type recorder[T any] struct {
	t       testing.TB
	initial int64 // requested in OnSubscribe (0: nothing)

	mu        sync.Mutex
	sub       flowable.Subscription
	items     []T
	err       error
	completed bool
	requested int64
	violation string

	inSignal atomic.Int32
	done     chan struct{}
	onNext   func(r *recorder[T], v T) // optional, runs inside OnNext
}

func newRecorder[T any](t testing.TB, initial int64) *recorder[T] {
	return &recorder[T]{t: t, initial: initial, done: make(chan struct{})}
}

func (r *recorder[T]) enter(name string) {
	if r.inSignal.Add(1) != 1 {
		r.fail("overlapping signal " + name + " (rule 1.3)")
	}
}

func (r *recorder[T]) leave() { r.inSignal.Add(-1) }

func (r *recorder[T]) fail(msg string) {
	r.mu.Lock()
	if r.violation == "" {
		r.violation = msg
	}
	r.mu.Unlock()
}

func (r *recorder[T]) terminatedLocked() bool { return r.err != nil || r.completed }

func (r *recorder[T]) OnSubscribe(s flowable.Subscription) {
	r.enter("OnSubscribe")
	r.mu.Lock()
	if r.sub != nil {
		r.violation = "OnSubscribe twice"
	}
	r.sub = s
	r.mu.Unlock()
	r.leave()
	if r.initial > 0 {
		r.Request(r.initial)
	}
}

// Request asks for n more and accounts for it.
func (r *recorder[T]) Request(n int64) {
	r.mu.Lock()
	if n > 0 {
		r.requested += n
		if r.requested < 0 {
			r.requested = flowable.Unbounded
		}
	}
	s := r.sub
	r.mu.Unlock()
	s.Request(n)
}

func (r *recorder[T]) Cancel() {
	r.mu.Lock()
	s := r.sub
	r.mu.Unlock()
	s.Cancel()
}

func (r *recorder[T]) OnNext(v T) {
	r.enter("OnNext")
	r.mu.Lock()
	switch {
	case r.sub == nil && r.violation == "":
		r.violation = "OnNext before OnSubscribe"
	case r.terminatedLocked() && r.violation == "":
		r.violation = "OnNext after a terminal signal"
	case int64(len(r.items)) >= r.requested && r.violation == "":
		r.violation = fmt.Sprintf("OnNext #%d with only %d requested", len(r.items)+1, r.requested)
	}
	r.items = append(r.items, v)
	r.mu.Unlock()
	if r.onNext != nil {
		r.onNext(r, v)
	}
	r.leave()
}

func (r *recorder[T]) terminal(err error) {
	r.mu.Lock()
	switch {
	case r.sub == nil && r.violation == "":
		r.violation = "terminal signal before OnSubscribe"
	case r.terminatedLocked() && r.violation == "":
		r.violation = "second terminal signal"
	}
	first := !r.terminatedLocked()
	if err != nil {
		r.err = err
	} else {
		r.completed = true
	}
	r.mu.Unlock()
	if first {
		close(r.done)
	}
}

func (r *recorder[T]) OnError(err error) {
	r.enter("OnError")
	if err == nil {
		r.fail("OnError(nil)")
	}
	r.terminal(err)
	r.leave()
}

func (r *recorder[T]) OnComplete() {
	r.enter("OnComplete")
	r.terminal(nil)
	r.leave()
}

// wait waits for a terminal signal.
func (r *recorder[T]) wait() {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(defaultTestTimeout):
		r.t.Fatal("no terminal signal")
	}
}

// snapshot returns what was recorded, failing the test on a rule violation.
func (r *recorder[T]) snapshot() (items []T, err error, completed bool) {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.violation != "" {
		r.t.Errorf("rule violation: %s", r.violation)
	}
	return append([]T(nil), r.items...), r.err, r.completed
}

func (r *recorder[T]) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.items)
}

func seq(from, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = from + i
	}
	return s
}
