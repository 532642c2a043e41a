package bulkhead_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
)

// These tests pin what a panicking callback leaves behind when it runs while
// a call of the Semaphore is half-done (issue 24, item 3): the panic goes on
// to the caller, and every waiter the call touched still reaches exactly one
// outcome, with no permit stranded.

// acquireRecovering calls AcquirePermissionAsync and returns what it
// returned and what it panicked with, as a net/http handler's caller would
// see it.
func acquireRecovering(s *bulkhead.Semaphore) (a *bulkhead.Acquisition, panicked any) {
	defer func() { panicked = recover() }()
	return s.AcquirePermissionAsync(), nil
}

func TestPanicInEvictedCallbackWithdrawsNewcomerAndStrandsNoPermit(t *testing.T) {
	s := newSemaphore(t, "lifo-panic", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1, QueueOrder: bulkhead.LIFO})
	var events []string
	defer s.OnEvent(func(e bulkhead.Event) { events = append(events, e.Type.String()) })()
	require.True(t, s.TryAcquirePermission())
	evicted := s.AcquirePermissionAsync()
	later := make(chan error, 1)
	evicted.OnDone(func(error) { panic("evicted callback") })
	evicted.OnDone(func(err error) { later <- err })
	events = nil

	newcomer, panicked := acquireRecovering(s)

	assert.Equal(t, "evicted callback", panicked, "the callback's panic goes on to the caller")
	assert.Nil(t, newcomer, "AcquirePermissionAsync did not return")
	var fe *bulkhead.FullError
	require.ErrorAs(t, evicted.Err(), &fe)
	assert.Equal(t, bulkhead.Evicted, fe.Reason)
	assert.True(t, errors.Is(<-later, evicted.Err()), "the evicted waiter's later callback still runs")
	m := s.Metrics()
	assert.Equal(t, 0, m.QueuedCalls, "the newcomer nobody holds was withdrawn, not left queued")
	assert.Equal(t, 1, m.InFlightCalls)
	assert.Equal(t, []string{"rejected", "cancelled"}, events)

	s.FinishCall()
	assert.Equal(t, 0, s.Metrics().InFlightCalls, "the permit came back instead of going to the lost newcomer")
	assert.True(t, s.TryAcquirePermission(), "the permit is free for the next call")
	s.FinishCall()
}

func TestPanicInEvictedCallbackAfterNewcomerWasGrantedGivesItsPermitBack(t *testing.T) {
	s := newSemaphore(t, "lifo-panic-granted", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1, QueueOrder: bulkhead.LIFO})
	require.True(t, s.TryAcquirePermission())
	evicted := s.AcquirePermissionAsync()
	evicted.OnDone(func(error) {
		s.FinishCall() // the permit goes to the newcomer, queued by now
		panic("evicted callback")
	})

	_, panicked := acquireRecovering(s)

	assert.Equal(t, "evicted callback", panicked)
	m := s.Metrics()
	assert.Equal(t, 0, m.InFlightCalls, "the lost newcomer's grant was given back")
	assert.Equal(t, 0, m.QueuedCalls)
}

func TestGoexitInEvictedCallbackWithdrawsNewcomer(t *testing.T) {
	s := newSemaphore(t, "lifo-goexit", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1, QueueOrder: bulkhead.LIFO})
	require.True(t, s.TryAcquirePermission())
	evicted := s.AcquirePermissionAsync()
	evicted.OnDone(func(error) { runtime.Goexit() })
	returned := make(chan *bulkhead.Acquisition, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		returned <- s.AcquirePermissionAsync()
	}()
	<-done

	assert.Empty(t, returned, "the caller's goroutine ended inside AcquirePermissionAsync")
	assert.Equal(t, 0, s.Metrics().QueuedCalls)
	s.FinishCall()
	assert.Equal(t, 0, s.Metrics().InFlightCalls)
}

// goexitOnce returns a listener that calls runtime.Goexit the first time it
// sees an event of type t, and does nothing otherwise.
func goexitOnce(t bulkhead.EventType) func(bulkhead.Event) {
	var fired atomic.Bool
	return func(e bulkhead.Event) {
		if e.Type == t && fired.CompareAndSwap(false, true) {
			runtime.Goexit()
		}
	}
}

// onGoroutine runs f on a goroutine of its own and waits until it has
// ended, normally or by runtime.Goexit.
func onGoroutine(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

func TestGoexitInFinishedListenerStillWakesBlockingWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "goexit-finished", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: bulkhead.NoTimeout, MaxQueuedCalls: 1})
		require.True(t, s.TryAcquirePermission())
		woken := make(chan error, 1)
		go func() { woken <- s.AcquirePermission(context.Background()) }()
		synctest.Wait()
		require.Equal(t, 1, s.Metrics().QueuedCalls)
		defer s.OnEvent(goexitOnce(bulkhead.CallFinished))()

		onGoroutine(s.FinishCall)
		synctest.Wait()

		select {
		case err := <-woken:
			require.NoError(t, err)
		default:
			t.Fatal("the waiter granted by a FinishCall whose listener called Goexit was not woken")
		}
		s.FinishCall()
	})
}

func TestGoexitInPermittedListenerStillRunsCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "goexit-permitted", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: bulkhead.NoTimeout, MaxQueuedCalls: 1})
		require.True(t, s.TryAcquirePermission())
		a := s.AcquirePermissionAsync()
		ran := make(chan error, 1)
		a.OnDone(func(err error) { ran <- err })
		defer s.OnEvent(goexitOnce(bulkhead.CallPermitted))()

		onGoroutine(s.ReleasePermission)
		synctest.Wait()

		select {
		case err := <-ran:
			require.NoError(t, err)
		default:
			t.Fatal("the callback of a grant whose listener called Goexit did not run")
		}
		s.FinishCall()
	})
}

func TestGoexitInCancelledListenerStillRunsCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "goexit-cancelled", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: bulkhead.NoTimeout, MaxQueuedCalls: 1})
		require.True(t, s.TryAcquirePermission())
		a := s.AcquirePermissionAsync()
		ran := make(chan error, 1)
		a.OnDone(func(err error) { ran <- err })
		defer s.OnEvent(goexitOnce(bulkhead.CallCancelled))()

		onGoroutine(func() { a.Cancel() })
		synctest.Wait()

		select {
		case err := <-ran:
			require.ErrorIs(t, err, bulkhead.ErrCancelled)
		default:
			t.Fatal("the callback of a Cancel whose listener called Goexit did not run")
		}
		s.FinishCall()
	})
}
