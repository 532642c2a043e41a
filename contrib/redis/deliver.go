package redis

import (
	"sync"

	"github.com/rxbulkhead/bulkhead"
)

// delivery is one outcome decided by a round trip: a grant (err nil) or a
// rejection.
type delivery struct {
	p      *Permit
	err    error
	reason bulkhead.Reason
}

// deliveryQueue hands outcomes from the dispatcher to the delivery
// goroutine, which runs the callbacks (through the Resolvers), in decision
// order, never under a lock.
type deliveryQueue struct {
	mu      sync.Mutex
	pending []delivery
	spare   []delivery
	signal  chan struct{}
	// rest is what remains of the batch being delivered, owned by the
	// delivery goroutine: if user code ends that goroutine, the one that
	// takes its place (Store.runDeliveries) starts there.
	rest []delivery
}

func (q *deliveryQueue) init() { q.signal = make(chan struct{}, 1) }

func (q *deliveryQueue) push(ds []delivery) {
	if len(ds) == 0 {
		return
	}
	q.mu.Lock()
	q.pending = append(q.pending, ds...)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *deliveryQueue) take() []delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	ds := q.pending
	q.pending, q.spare = q.spare[:0], nil
	return ds
}

// run delivers until done is closed; outcomes left then are delivered by
// Store.Close. It starts with the rest of a batch whose delivery ended the
// goroutine before (q.rest).
func (q *deliveryQueue) run(done <-chan struct{}) {
	for {
		ds := q.rest
		if ds == nil {
			select {
			case <-done:
				return
			case <-q.signal:
			}
			ds = q.take()
		}
		for i := range ds {
			d := ds[i]
			ds[i] = delivery{}
			q.rest = ds[i+1:]
			deliver(d)
		}
		q.rest = nil
		q.mu.Lock()
		if q.spare == nil {
			q.spare = ds[:0]
		}
		q.mu.Unlock()
	}
}

func deliver(d delivery) {
	if d.err == nil {
		d.p.b.grant(d.p)
		return
	}
	d.p.b.reject(d.p, d.err, d.reason)
}
