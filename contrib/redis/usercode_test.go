package redis_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// User code that calls runtime.Goexit (t.FailNow in a test's callback does)
// on a goroutine of the Store or of the Clock: the fleet goes on. These
// tests fail on code that let the goroutine end with it.

// goexitOnce returns a listener that calls runtime.Goexit the first time it
// sees an event of type t.
func goexitOnce(t bulkhead.EventType) func(bulkhead.Event) {
	var fired atomic.Bool
	return func(e bulkhead.Event) {
		if e.Type == t && fired.CompareAndSwap(false, true) {
			runtime.Goexit()
		}
	}
}

// A grant's callback that calls runtime.Goexit on the delivery goroutine
// ends that goroutine: the Store carries on with another, so the other
// outcomes of that round trip and every later one are still delivered.
func TestAGrantCallbackThatCallsGoexitStopsNoOtherDelivery(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	b := newBulkhead(t, s, "p", fleetConfig(1, time.Minute))
	first := b.Acquire()
	if err := await(t, first.Acquisition()); err != nil {
		t.Fatal(err)
	}
	// Queued behind first, so its callbacks run on the delivery goroutine.
	exits := b.Acquire()
	ran := make(chan error, 2)
	exits.Acquisition().OnDone(func(error) { runtime.Goexit() })
	exits.Acquisition().OnDone(func(err error) { ran <- err }) // run by a fresh goroutine
	behind := b.Acquire()
	first.Finish()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(outcomeTimeout):
		t.Fatal("the callback after the one that called Goexit did not run")
	}
	exits.Finish()
	if err := await(t, behind.Acquisition()); err != nil {
		t.Fatalf("the call queued behind: %v", err)
	}
	behind.Finish()
	later := b.Acquire()
	if err := await(t, later.Acquisition()); err != nil {
		t.Fatalf("a later call: %v", err)
	}
	later.Finish()
}

// A listener that calls runtime.Goexit on the CallPermitted of a grant
// decided by a round trip: the grant is still delivered (its callbacks
// run), and later grants too.
func TestAPermittedListenerThatCallsGoexitStillDeliversTheGrant(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	b := newBulkhead(t, s, "p", fleetConfig(1, time.Minute))
	defer b.OnEvent(goexitOnce(bulkhead.CallPermitted))()
	p := b.Acquire()
	ran := make(chan error, 1)
	p.Acquisition().OnDone(func(err error) { ran <- err })
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(outcomeTimeout):
		t.Fatal("the callback of a grant whose listener called Goexit did not run")
	}
	p.Finish()
	later := b.Acquire()
	if err := await(t, later.Acquisition()); err != nil {
		t.Fatalf("a later call: %v", err)
	}
	later.Finish()
}

// A listener that calls runtime.Goexit on a CallRejected decided by a
// round trip (NoWait): the rejection is delivered, and later outcomes too.
func TestARejectedListenerThatCallsGoexitStillDeliversTheRejection(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	b := newBulkhead(t, s, "p", fleetConfig(1, 0))
	held := b.Acquire()
	if err := await(t, held.Acquisition()); err != nil {
		t.Fatal(err)
	}
	defer b.OnEvent(goexitOnce(bulkhead.CallRejected))()
	refused := b.Acquire()
	if err := await(t, refused.Acquisition()); err == nil {
		t.Fatal("granted beyond the limit")
	}
	held.Finish()
	later := b.Acquire()
	if err := await(t, later.Acquisition()); err != nil {
		t.Fatalf("a later call: %v", err)
	}
	later.Finish()
}

// A listener that calls runtime.Goexit on CallCancelled ends the goroutine
// of Cancel (as it does for a Semaphore), but the withdrawn call's
// callbacks still run.
func TestACancelledListenerThatCallsGoexitStillRunsTheCallbacks(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	b := newBulkhead(t, s, "p", fleetConfig(1, time.Minute))
	held := b.Acquire()
	if err := await(t, held.Acquisition()); err != nil {
		t.Fatal(err)
	}
	waiting := b.Acquire()
	ran := make(chan error, 1)
	waiting.Acquisition().OnDone(func(err error) { ran <- err })
	defer b.OnEvent(goexitOnce(bulkhead.CallCancelled))()
	testkit.RunToEnd(func() { waiting.Acquisition().Cancel() })
	select {
	case err := <-ran:
		if err != bulkhead.ErrCancelled {
			t.Fatalf("outcome %v, want ErrCancelled", err)
		}
	case <-time.After(outcomeTimeout):
		t.Fatal("the callback of a Cancel whose listener called Goexit did not run")
	}
	held.Finish()
}

// An OnEvict listener that calls runtime.Goexit ends the sweeping
// goroutine: the registry's sweeps go on, so later idle bulkheads are
// still evicted (the sweep stayed "armed" for ever, and the registry grew
// without bound, before).
func TestAnEvictListenerThatCallsGoexitStopsNoLaterEviction(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Now())
	cfg := fastStore()
	cfg.Clock = clock
	s, _ := newStore(t, sharedServer(t), cfg)
	reg, err := rxredis.NewRegistry(s, fleetConfig(1, 0), rxredis.WithIdleTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var fired atomic.Bool
	defer reg.OnEvict(func(string) {
		if fired.CompareAndSwap(false, true) {
			runtime.Goexit()
		}
	})()
	use := func(key string) {
		p := reg.Acquire(key, bulkhead.CallOptions{})
		if err := await(t, p.Acquisition()); err != nil {
			t.Fatal(err)
		}
		p.Finish()
	}
	use("a")
	for i := 0; !fired.Load(); i++ {
		if i == 10 {
			t.Fatal("a not evicted")
		}
		testkit.RunToEnd(func() { clock.Advance(500 * time.Millisecond) })
	}
	use("b")
	for i := 0; reg.Stats().Evictions < 2; i++ {
		if i == 10 {
			t.Fatalf("b not evicted after the first OnEvict listener called Goexit: %+v", reg.Stats())
		}
		testkit.RunToEnd(func() { clock.Advance(500 * time.Millisecond) })
	}
}
