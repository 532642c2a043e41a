package testkit_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Promise (ClosePool): it "fails the test if ... p still has a worker or a
// queued task" at cleanup, naming the pool. A leak check that cannot fail
// is a bug: a task that never ends by itself is the leak, and the cleanup
// must report it, not wait for it for ever (a hang outside a bubble, a
// deadlock panic inside one). A task that waits for its context (which the
// test forgot to cancel) ends once ClosePool cancels it; one that ignores
// its context is named as such.
func TestHostileClosePoolReportsATaskThatNeverEndsInsteadOfWaitingForIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		task func(ctx context.Context, release <-chan struct{})
		want []string
	}{
		{"waits for its context", func(ctx context.Context, _ <-chan struct{}) { <-ctx.Done() },
			[]string{`pool "soap" leaked: 1 active worker(s) and 1 queued task(s)`}},
		{"ignores its context", func(_ context.Context, release <-chan struct{}) { <-release },
			[]string{`pool "soap" leaked: 1 active worker(s) and 1 queued task(s)`, "1 still running 5s after their cancellation"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, err := pool.New("soap", pool.Config{MaxWorkers: 1, QueueCapacity: 4, MaxQueueWait: bulkhead.NoTimeout})
				if err != nil {
					t.Fatal(err)
				}
				f := &fakeTB{}
				testkit.ClosePool(f, p)
				release := make(chan struct{})
				var futures []*pool.Future[int]
				for range 2 { // one runs, one is queued behind it
					futures = append(futures, pool.Submit(context.Background(), p, func(ctx context.Context) (int, error) {
						tc.task(ctx, release)
						return 0, ctx.Err()
					}))
				}
				done := make(chan struct{})
				go func() {
					defer close(done)
					f.runCleanups()
				}()
				time.Sleep(time.Hour) // bubble time: far beyond any bound the cleanup may take
				synctest.Wait()
				select {
				case <-done:
				default:
					t.Error("ClosePool's cleanup still waits for the task after an hour: the leak is never reported")
					ctx, cancel := context.WithCancel(context.Background())
					cancel()
					_ = p.Close(ctx) // cancels the task
				}
				close(release)
				<-done
				wantFailure(t, f, tc.want...)
				for i, fu := range futures {
					<-fu.Done()
					if fu.Err() == nil {
						t.Errorf("task %d: not cancelled", i)
					}
				}
			})
		})
	}
}
