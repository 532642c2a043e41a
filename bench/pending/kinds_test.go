package pending_test

import (
	"context"
	"slices"

	"github.com/samber/ro"

	bulkhead "github.com/rxbulkhead/bulkhead"
	bro "github.com/rxbulkhead/bulkhead/contrib/ro"
	"github.com/rxbulkhead/bulkhead/iterate"
)

func kinds() []kind {
	return append(coreKinds,
		kind{"ro", func(b *bulkhead.Semaphore) func(context.Context) func() {
			obs := bro.Bulkhead(b, ro.Just(1))
			return func(context.Context) func() { return obs.Subscribe(ro.NoopObserver[int]()).Unsubscribe }
		}},
		// An iterator blocks the goroutine that ranges over it: the
		// pending call is that goroutine (the caller's own) plus the
		// queue record.
		kind{"iterator", func(b *bulkhead.Semaphore) func(context.Context) func() {
			return func(ctx context.Context) func() {
				done := make(chan struct{})
				go func() {
					defer close(done)
					for range iterate.Seq(ctx, b, slices.Values([]int{1})) {
					}
				}()
				return func() { <-done }
			}
		}},
	)
}
