package flowable

import (
	"sync/atomic"

	"github.com/rxbulkhead/bulkhead/internal/permit"
)

// pullPublisher is the Publisher of the synchronous sources (Range,
// FromSlice, Just): n elements, the i-th computed by at(i), emitted on the
// goroutine that requests them. It is fuseable: the Bulkhead operator can
// subscribe it without interposing on the element path (see fuseable).
type pullPublisher[T any] struct {
	n  int
	at func(i int) T
}

// Subscribe starts a subscription that signals s.
func (p pullPublisher[T]) Subscribe(s Subscriber[T]) {
	if s == nil {
		panic("flowable: Subscribe called with a nil Subscriber (rule 1.9)")
	}
	p.start(s, s, nil)
}

// subscribeFused starts a subscription whose handle goes to
// parent.OnSubscribe and whose OnNext, OnError and OnComplete go straight to
// down; g learns about the first element and the termination (see
// fuseable).
func (p pullPublisher[T]) subscribeFused(parent, down Subscriber[T], g *permit.Guard) {
	p.start(parent, down, g)
}

// start hands the subscription to parent.OnSubscribe (only that method of
// parent is called) and signals down. An empty source completes without
// waiting for demand.
func (p pullPublisher[T]) start(parent, down Subscriber[T], g *permit.Guard) {
	s := &pull[T]{down: down, at: p.at, end: p.n, guard: g}
	parent.OnSubscribe(s)
	if p.n == 0 {
		s.trigger(1)
	}
}

// pull is the Subscription of a pullPublisher: elements are emitted on the
// goroutine that requests them.
//
// requested is both the outstanding demand and the emission lock: the
// Request that moves it from 0 runs the emission loop; Requests made while
// the loop runs only add to it, and the loop picks them up before it exits.
// So signals are serial (rule 1.3) and a Request made inside OnNext does not
// recurse (rule 3.3). Demand that reached math.MaxInt64 is never decremented
// (unbounded). A Request(n <= 0) is recorded in bad and adds one phantom
// unit of demand so that the loop runs and signals the error; one made
// inside OnNext stops the loop after that OnNext, so the error comes next,
// before any further element or OnComplete.
//
// guard is nil unless the subscription is fused into the Bulkhead operator.
// Then the emission loop, which owns the signals to down, calls
// guard.MarkRan before the first OnNext (so a Cancel made from that OnNext
// or later gives the permit back with FinishCall) and guard.Complete before
// OnError or OnComplete (so the permit is free when down learns that the
// call ended). Neither touches the per-element path.
type pull[T any] struct {
	down  Subscriber[T]
	at    func(i int) T
	end   int
	i     int           // next index; owned by the emission loop
	guard *permit.Guard // nil when not fused; read only by the emission loop

	requested atomic.Int64
	done      atomic.Bool // cancelled or terminated
	bad       atomic.Int64
}

// Request adds n to the demand and emits on the calling goroutine unless an
// emission loop is already running.
func (p *pull[T]) Request(n int64) {
	if n <= 0 {
		badRequest(&p.bad, n)
		n = 1
	}
	p.trigger(n)
}

// Cancel stops the emission; elements already being emitted may still
// arrive (at most the one in flight).
func (p *pull[T]) Cancel() { p.done.Store(true) }

func (p *pull[T]) trigger(n int64) {
	if addDemand(&p.requested, n) == 0 {
		p.emit()
	}
}

func (p *pull[T]) emit() {
	var e int64
	r := p.requested.Load()
	for {
		if p.done.Load() {
			return
		}
		if b := p.bad.Load(); b != 0 {
			p.done.Store(true)
			if p.guard != nil {
				p.guard.Complete()
			}
			p.down.OnError(badErr(b))
			return
		}
		if p.i == 0 && p.guard != nil && e != r && p.end > 0 {
			// The loop below delivers element 0 right away: mark the
			// call as run first, once per subscription.
			p.guard.MarkRan()
		}
		for e != r && p.i < p.end {
			v := p.at(p.i)
			p.i++
			p.down.OnNext(v)
			e++
			if p.done.Load() {
				return
			}
			if p.bad.Load() != 0 {
				break // a Request(n <= 0) made inside OnNext: signal it next
			}
		}
		if p.bad.Load() != 0 {
			continue // the check at the top signals it, before any OnComplete
		}
		if p.i == p.end {
			p.done.Store(true)
			if p.guard != nil {
				p.guard.Complete()
			}
			p.down.OnComplete()
			return
		}
		if r = p.requested.Load(); r == e {
			if r = p.requested.Add(-e); r == 0 {
				return
			}
			e = 0
		}
	}
}
