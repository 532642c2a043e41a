package testkit

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// signalKind is the kind of one recorded signal.
type signalKind uint8

const (
	onSubscribe signalKind = iota + 1
	onNext
	onError
	onComplete
)

// signal is one recorded signal.
type signal[T any] struct {
	kind  signalKind
	value T     // onNext
	err   error // onError
}

func (s signal[T]) String() string {
	switch s.kind {
	case onSubscribe:
		return "OnSubscribe"
	case onNext:
		return fmt.Sprintf("OnNext(%v)", s.value)
	case onError:
		return fmt.Sprintf("OnError(%v)", s.err)
	case onComplete:
		return "OnComplete"
	}
	return "?"
}

// maxShown bounds how many signals a failure message lists.
const maxShown = 20

// recorder keeps the signals received by a TestSubscriber or a TestObserver,
// in arrival order, and wakes waiters when a signal arrives. who names the
// owner in failure messages.
type recorder[T any] struct {
	who string

	mu         sync.Mutex
	signals    []signal[T]
	values     []T
	err        error // the first error
	completed  bool
	cancelled  bool // the owner cancelled the subscription or observation
	violations []string
	changed    broadcast
}

// add records s; call with mu held.
func (r *recorder[T]) addLocked(s signal[T]) {
	r.signals = append(r.signals, s)
	switch s.kind {
	case onNext:
		r.values = append(r.values, s.value)
	case onError:
		if r.err == nil {
			r.err = s.err
		}
	case onComplete:
		r.completed = true
	}
	r.changed.notify()
}

func (r *recorder[T]) violateLocked(format string, args ...any) {
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

func (r *recorder[T]) terminatedLocked() bool { return r.err != nil || r.completed }

func (r *recorder[T]) valuesCopy() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.values...)
}

func (r *recorder[T]) firstErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *recorder[T]) isComplete() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.completed
}

func (r *recorder[T]) violationsCopy() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.violations...)
}

// await blocks until a terminal signal arrives or timeout passes.
func (r *recorder[T]) await(timeout time.Duration) bool {
	return waitUntil(&r.mu, &r.changed, timeout, r.terminatedLocked)
}

// awaitCount blocks until n values arrived, a terminal signal arrived or
// timeout passes, and reports whether n values arrived.
func (r *recorder[T]) awaitCount(n int, timeout time.Duration) bool {
	waitUntil(&r.mu, &r.changed, timeout, func() bool { return len(r.values) >= n || r.terminatedLocked() })
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.values) >= n
}

// describeLocked renders what was received, for failure messages.
func (r *recorder[T]) describeLocked() string {
	var b strings.Builder
	b.WriteString("received: ")
	if len(r.signals) == 0 {
		b.WriteString("no signal")
	}
	for i, s := range r.signals {
		if i == maxShown {
			fmt.Fprintf(&b, ", ... (%d more)", len(r.signals)-maxShown)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s.String())
	}
	fmt.Fprintf(&b, " [%d value(s)", len(r.values))
	switch {
	case r.err != nil:
		b.WriteString(", terminated with an error]")
	case r.completed:
		b.WriteString(", completed]")
	case r.cancelled:
		b.WriteString(", cancelled]")
	default:
		b.WriteString(", not terminated]")
	}
	for _, v := range r.violations {
		b.WriteString("\n  rule violation: ")
		b.WriteString(v)
	}
	return b.String()
}

func (r *recorder[T]) describe() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.describeLocked()
}

// fail reports a failed assertion with what was received.
func (r *recorder[T]) fail(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Errorf("testkit: %s: %s\n  %s", r.who, fmt.Sprintf(format, args...), r.describeLocked())
}

func (r *recorder[T]) assertValues(t testing.TB, want []T) bool {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.values) == len(want) && (len(want) == 0 || reflect.DeepEqual(r.values, want)) {
		return true
	}
	r.fail(t, "values = %v, want %v", r.values, want)
	return false
}

func (r *recorder[T]) assertNoValues(t testing.TB) bool {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.values) == 0 {
		return true
	}
	r.fail(t, "got %d value(s), want none", len(r.values))
	return false
}

func (r *recorder[T]) assertComplete(t testing.TB) bool {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.err != nil:
		r.fail(t, "terminated with error %q, want completion", r.err)
	case !r.completed:
		r.fail(t, "not completed")
	default:
		return true
	}
	return false
}

func (r *recorder[T]) assertError(t testing.TB, target error) bool {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.err == nil && r.completed:
		r.fail(t, "completed, want an error matching %q", target)
	case r.err == nil:
		r.fail(t, "no error, want one matching %q", target)
	case !errors.Is(r.err, target):
		r.fail(t, "error %q (%T) does not match %q (errors.Is)", r.err, r.err, target)
	default:
		return true
	}
	return false
}

func (r *recorder[T]) assertNotTerminated(t testing.TB) bool {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.terminatedLocked() {
		return true
	}
	r.fail(t, "terminated, want no terminal signal yet")
	return false
}

func (r *recorder[T]) assertNoViolations(t testing.TB) bool {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.violations) == 0 {
		return true
	}
	r.fail(t, "%d Reactive Streams rule violation(s)", len(r.violations))
	return false
}
