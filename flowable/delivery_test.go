package flowable_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
)

// TestSlowSubscriberDoesNotStarveAnotherSubscription: a fused source emits
// on the goroutine that delivered its grant. While the first subscriber's
// OnNext blocks there, a second subscription granted by another goroutine
// must receive its elements on that goroutine at once, not after the first
// subscriber's OnNext returns (issue 13, finding 4).
func TestSlowSubscriberDoesNotStarveAnotherSubscription(t *testing.T) {
	for _, src := range bothPaths(3) {
		t.Run(src.name, func(t *testing.T) {
			b := newBulkhead(t, bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
			for range 2 {
				if !b.TryAcquirePermission() {
					t.Fatal("the permits of a new bulkhead are not free")
				}
			}
			entered, hold := make(chan struct{}), make(chan struct{})
			var once sync.Once
			slow := flowable.Funcs[int]{
				Start: func(s flowable.Subscription) { s.Request(3) },
				Next: func(int) {
					once.Do(func() { close(entered) })
					<-hold
				},
			}
			flowable.Bulkhead(b, src.pub).Subscribe(slow)
			var got []int
			completed := false
			flowable.Bulkhead(b, src.pub).Subscribe(flowable.Funcs[int]{
				Start:    func(s flowable.Subscription) { s.Request(3) },
				Next:     func(v int) { got = append(got, v) },
				Complete: func() { completed = true },
			})
			var wg sync.WaitGroup
			wg.Go(b.ReleasePermission) // grants the slow subscription: its OnNext blocks there
			<-entered
			b.ReleasePermission() // grants the second one, on this goroutine
			if !slices.Equal(got, seq(0, 3)) || !completed {
				t.Errorf("while another subscriber's OnNext blocks, the second subscription got %v (completed %v), want %v", got, completed, seq(0, 3))
			}
			close(hold)
			wg.Wait()
		})
	}
}
