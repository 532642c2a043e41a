package permit

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// cancelledBulkhead rejects every acquisition with bulkhead.ErrCancelled, as
// a custom Bulkhead may (the error is the Bulkhead's, not the subscriber's
// cancel).
type cancelledBulkhead struct{}

func (cancelledBulkhead) Name() string { return "rejects-with-cancelled" }
func (cancelledBulkhead) AcquirePermissionAsync() *bulkhead.Acquisition {
	return bulkhead.RejectedAcquisition(bulkhead.ErrCancelled)
}
func (cancelledBulkhead) ReleasePermission() { panic("no permit was granted") }
func (cancelledBulkhead) FinishCall()        { panic("no permit was granted") }

// blockingCancelled is a BlockingBulkhead whose blocking acquire fails with
// bulkhead.ErrCancelled once release is closed.
type blockingCancelled struct{ release chan struct{} }

func (blockingCancelled) Name() string { return "blocking-cancelled" }
func (b blockingCancelled) AcquirePermission(ctx context.Context) error {
	select {
	case <-b.release:
		return bulkhead.ErrCancelled
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (blockingCancelled) ReleasePermission() { panic("no permit was granted") }
func (blockingCancelled) FinishCall()        { panic("no permit was granted") }

func TestRejectionWithErrCancelledAtOnceIsSignalled(t *testing.T) {
	for _, kind := range []string{"Disposable", "Subscription"} {
		t.Run(kind, func(t *testing.T) {
			h := newHandler()
			if kind == "Disposable" {
				var d Disposable
				d.Start(cancelledBulkhead{}, h)
			} else {
				var s Subscription
				s.Start(cancelledBulkhead{}, h)
			}
			if h.rejected.Load() != 1 || !errors.Is(h.error(), bulkhead.ErrCancelled) {
				t.Fatalf("rejected %d times with %v; want once with ErrCancelled (the subscriber did not cancel)", h.rejected.Load(), h.error())
			}
		})
	}
}

func TestRejectionWithErrCancelledLaterIsSignalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := blockingCancelled{release: make(chan struct{})}
		h := newHandler()
		var s Subscription
		s.Start(bulkhead.FromBlocking(b), h)
		synctest.Wait()
		if h.rejected.Load() != 0 {
			t.Fatal("rejected before the blocking acquire returned")
		}
		close(b.release)
		synctest.Wait()
		if h.rejected.Load() != 1 || h.granted.Load() != 0 || !errors.Is(h.error(), bulkhead.ErrCancelled) {
			t.Fatalf("rejected %d, granted %d, err %v: want exactly one rejection with ErrCancelled", h.rejected.Load(), h.granted.Load(), h.error())
		}
		s.Cancel() // after the rejection: nothing to do
		if h.rejected.Load() != 1 {
			t.Fatal("a second terminal signal")
		}
	})
}

func TestOwnCancelStillSignalsNothing(t *testing.T) {
	s, h, _, grant := pendingSubscription(t)
	s.Cancel()
	grant()
	if h.rejected.Load() != 0 || h.granted.Load() != 0 {
		t.Fatalf("rejected %d, granted %d after the subscriber's own cancel; want neither", h.rejected.Load(), h.granted.Load())
	}
}
