package redis_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// Close waits for the Store's goroutines, so called on the delivery
// goroutine (a grant's callback, a listener of the grant's CallPermitted)
// it would wait for itself. What its doc says to do there instead, go
// s.Close(), closes the Store: the call queued behind is rejected with
// ErrClosed, the lease of the call whose callback closed it is given back,
// and Close returns.
func TestCloseStartedOnItsOwnGoroutineFromTheDeliveryGoroutineClosesTheStore(t *testing.T) {
	for _, from := range []string{"grant callback", "CallPermitted listener"} {
		t.Run(from, func(t *testing.T) {
			s, c := newStore(t, sharedServer(t), fastStore())
			b := newBulkhead(t, s, "p", fleetConfig(1, time.Minute))
			first := b.Acquire()
			if err := await(t, first.Acquisition()); err != nil {
				t.Fatal(err)
			}
			closing := b.Acquire() // queued: its grant is delivered by the delivery goroutine
			closed := make(chan error, 1)
			closeOnce := func() { go func() { closed <- s.Close() }() }
			if from == "grant callback" {
				closing.Acquisition().OnDone(func(err error) {
					if err == nil {
						closeOnce()
					}
				})
			} else {
				remove := b.OnEvent(func(e bulkhead.Event) {
					if e.Type == bulkhead.CallPermitted {
						closeOnce()
					}
				})
				defer remove()
			}
			behind := b.Acquire()
			first.Finish()
			select {
			case err := <-closed:
				if err != nil {
					t.Fatalf("Close: %v", err)
				}
			case <-time.After(outcomeTimeout):
				t.Fatalf("Close started from the %s did not return within %v", from, outcomeTimeout)
			}
			if err := closing.Acquisition().Err(); err != nil {
				t.Fatalf("the call whose %s closed the Store: %v", from, err)
			}
			if err := await(t, behind.Acquisition()); !errors.Is(err, rxredis.ErrClosed) {
				t.Errorf("the call queued behind: %v, want ErrClosed", err)
			}
			closing.Finish() // after Close: does nothing
			fleetIdle(t, c, prefixFor(t), "p", outcomeTimeout)
		})
	}
}
