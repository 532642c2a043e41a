package testkit

import (
	"fmt"
	"reflect"
	"testing"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// Metered is a bulkhead whose permits can be counted. *bulkhead.Semaphore
// implements it; so can a custom bulkhead.
type Metered interface {
	Name() string
	Metrics() bulkhead.Metrics
}

// CheckPermits registers a t.Cleanup that fails the test if any of bhs holds
// a permit (Metrics().InFlightCalls != 0) or has a queued call
// (Metrics().QueuedCalls != 0) when the test ends: the permit-leak check.
// The failure names the bulkhead and both counts. Call it right after
// creating the bulkheads. Metrics are read when the cleanup runs, after the
// test function returned. Inside a testing/synctest bubble, cleanups run
// inside the bubble, and a check that fails is read again once every other
// goroutine of the bubble is durably blocked (synctest.Wait): a goroutine
// still on its way to giving a permit back when the test function returned
// (a delivery, the end of an observation) is not reported as a leak, and a
// permit held by a goroutine blocked for good is.
//
// The type parameter lets a slice be passed as it is:
//
//	testkit.CheckPermits(t, registry.All()...)
//
// checks the bulkheads a Registry holds now; CheckRegistry also checks those
// created later in the test.
func CheckPermits[B Metered](t testing.TB, bhs ...B) {
	t.Helper()
	held := make([]Metered, len(bhs))
	for i, b := range bhs {
		if isNil(b) {
			panic(fmt.Sprintf("testkit: CheckPermits: bulkhead #%d is nil", i+1))
		}
		held[i] = b
	}
	t.Cleanup(func() {
		t.Helper()
		for _, b := range held {
			checkPermits(t, b)
		}
	})
}

// Lister is a set of bulkheads, such as *bulkhead.Registry.
type Lister interface {
	All() []*bulkhead.Semaphore
}

// CheckRegistry registers a t.Cleanup that runs the permit-leak check of
// CheckPermits on every bulkhead r holds when the test ends, including the
// ones created during the test.
func CheckRegistry(t testing.TB, r Lister) {
	t.Helper()
	if isNil(r) {
		panic("testkit: CheckRegistry called with a nil registry")
	}
	t.Cleanup(func() {
		t.Helper()
		for _, b := range r.All() {
			checkPermits(t, b)
		}
	})
}

// isNil reports whether v is nil or a nil pointer.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

func checkPermits(t testing.TB, b Metered) {
	t.Helper()
	var m bulkhead.Metrics
	if leakedAfterSettling(func() bool {
		m = b.Metrics()
		return m.InFlightCalls != 0 || m.QueuedCalls != 0
	}) {
		t.Errorf("testkit: bulkhead %q: leaked at the end of the test: %d permit(s) held, %d call(s) queued (want 0 and 0)",
			b.Name(), m.InFlightCalls, m.QueuedCalls)
	}
}
