package testkit_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// fakeTB records failures instead of failing the real test, so the testkit's
// assertions can be checked to fail when they should. Methods it does not
// override panic (the embedded TB is nil), which flags unexpected use.
type fakeTB struct {
	testing.TB

	mu       sync.Mutex
	errors   []string
	fatal    bool
	cleanups []func()
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Error(args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprint(args...))
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	f.FailNow()
}

func (f *fakeTB) Fatal(args ...any) {
	f.Error(args...)
	f.FailNow()
}

func (f *fakeTB) FailNow() {
	f.mu.Lock()
	f.fatal = true
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeTB) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.errors) > 0
}

func (f *fakeTB) Logf(string, ...any) {}

func (f *fakeTB) Log(...any) {}

func (f *fakeTB) Cleanup(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups = append(f.cleanups, fn)
}

// runCleanups runs the registered cleanups in reverse order, as testing does.
func (f *fakeTB) runCleanups() {
	f.mu.Lock()
	cs := f.cleanups
	f.cleanups = nil
	f.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

func (f *fakeTB) messages() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.errors, "\n")
}

// runFake runs body with a fakeTB on its own goroutine (so FailNow can end
// it), then runs the cleanups, and returns the fake for inspection.
func runFake(body func(tb *fakeTB)) *fakeTB {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(f)
	}()
	<-done
	f.runCleanups()
	return f
}

// wantFailure fails t unless f recorded a failure whose message contains
// every one of parts.
func wantFailure(t *testing.T, f *fakeTB, parts ...string) {
	t.Helper()
	if !f.Failed() {
		t.Fatalf("the assertion did not fail; want a failure mentioning %q", parts)
	}
	msg := f.messages()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("failure message does not mention %q:\n%s", p, msg)
		}
	}
}

// wantPass fails t if f recorded a failure.
func wantPass(t *testing.T, f *fakeTB) {
	t.Helper()
	if f.Failed() {
		t.Fatalf("unexpected failure:\n%s", f.messages())
	}
}
