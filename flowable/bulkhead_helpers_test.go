package flowable_test

import (
	"sync/atomic"
	"testing"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// newBulkhead returns a Semaphore named "partner" that fails the test if a
// permit is still held or a call still queued when the test ends.
func newBulkhead(t testing.TB, cfg bulkhead.Config) *bulkhead.Semaphore {
	t.Helper()
	b, err := bulkhead.New("partner", cfg)
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, b)
	return b
}

// probe wraps a Publisher and counts its subscriptions and their
// cancellations.
type probe[T any] struct {
	src        flowable.Publisher[T]
	subscribed atomic.Int32
	cancelled  atomic.Int32
}

func newProbe[T any](src flowable.Publisher[T]) *probe[T] { return &probe[T]{src: src} }

func (p *probe[T]) Subscribe(s flowable.Subscriber[T]) {
	p.subscribed.Add(1)
	p.src.Subscribe(&probeSubscriber[T]{Subscriber: s, p: p})
}

type probeSubscriber[T any] struct {
	flowable.Subscriber[T]
	p *probe[T]
}

func (s *probeSubscriber[T]) OnSubscribe(sub flowable.Subscription) {
	s.Subscriber.OnSubscribe(&probeSubscription[T]{Subscription: sub, p: s.p})
}

type probeSubscription[T any] struct {
	flowable.Subscription
	p *probe[T]
}

func (s *probeSubscription[T]) Cancel() {
	s.p.cancelled.Add(1)
	s.Subscription.Cancel()
}
