package adaptivesim

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Kind is one kind of request the partner serves: a log-normal service
// time around Median with shape Sigma, of which a share Slow takes
// SlowFactor times longer (a heavy tail). The caller of a kind gives up
// after ten times its Median, and the partner then drops the call if it is
// still queued.
type Kind struct {
	Share      float64 // of the calls; the shares of a Partner add up to 1
	Median     time.Duration
	Sigma      float64
	Slow       float64 // share of the kind's calls that are SlowFactor times slower
	SlowFactor float64
}

// Partner is an M/G/c partner: its request kinds (the service-time
// distribution). Its C servers and queue are in Segment.Capacity.
type Partner struct {
	Name  string
	Kinds []Kind
}

// draw returns a call's service time and its caller's deadline.
func (p Partner) draw(rng *rand.Rand) (service, deadline time.Duration) {
	k := p.Kinds[0]
	if len(p.Kinds) > 1 {
		u := rng.Float64()
		for _, kk := range p.Kinds {
			k = kk
			if u < kk.Share {
				break
			}
			u -= kk.Share
		}
	}
	s := float64(k.Median) * math.Exp(k.Sigma*rng.NormFloat64())
	if k.Slow > 0 && rng.Float64() < k.Slow {
		s *= k.SlowFactor
	}
	return time.Duration(s), 10 * k.Median
}

// Mean is the mean service time.
func (p Partner) Mean() time.Duration {
	m := 0.0
	for _, k := range p.Kinds {
		km := float64(k.Median) * math.Exp(k.Sigma*k.Sigma/2) * (1 - k.Slow + k.Slow*k.SlowFactor)
		m += k.Share * km
	}
	return time.Duration(m)
}

// UnloadedP99 is the 99th percentile of the service time (the latency of a
// call that never queues), from 200 000 draws with a fixed seed.
func (p Partner) UnloadedP99() time.Duration {
	rng := rand.New(rand.NewPCG(99, 99))
	xs := make([]time.Duration, 200_000)
	for i := range xs {
		xs[i], _ = p.draw(rng)
	}
	slices.Sort(xs)
	return xs[len(xs)*99/100]
}

// Scenario is a partner, its capacity and the load over time, and the
// limit every contender starts from.
type Scenario struct {
	Partner  Partner
	Segments []Segment
	// Changes are the times at which the capacity changes in a step (the
	// start included); a ramp is one change, at its start.
	Changes []time.Duration
	Initial int // the limit every contender starts from
	Seed    uint64
	Trace   time.Duration // how often the limit is recorded
}

// Segment is a stretch of time with a constant capacity and load.
type Segment struct {
	Until    time.Duration // end of the segment (start: end of the previous one)
	Capacity int           // calls the partner serves at once (its servers)
	Rate     float64       // arrivals per second (Poisson)
}

// End is when the scenario ends.
func (sc Scenario) End() time.Duration { return sc.Segments[len(sc.Segments)-1].Until }

// segment returns the segment in force at t.
func (sc Scenario) segment(t time.Duration) Segment {
	i, _ := slices.BinarySearchFunc(sc.Segments, t, func(s Segment, t time.Duration) int {
		if s.Until <= t {
			return -1
		}
		return 1
	})
	return sc.Segments[min(i, len(sc.Segments)-1)]
}

// Limiter is one contender: it admits or rejects each call, hears how each
// admitted call ended, and reports its limit.
type Limiter interface {
	// Advance moves the limiter's clock to now (an offset from the start).
	Advance(now time.Duration)
	// Try admits a call or rejects it; a token identifies the call.
	Try() (token any, ok bool)
	// Done reports that the admitted call ended: answered in time, or
	// given up at the deadline (timedOut).
	Done(token any, timedOut bool)
	// Limit is the current limit.
	Limit() int
}

// Call is one call as the run saw it.
type Call struct {
	Sent     time.Duration
	Latency  time.Duration // until answered or given up
	Rejected bool
	TimedOut bool
}

// Run is what one contender did on the scenario.
type Run struct {
	Name   string
	Calls  []Call
	Limits []int // every Trace
}

type eventKind uint8

const (
	evArrival eventKind = iota
	evServed
	evDeadline
	evTrace
	evCapacity
)

type event struct {
	at   time.Duration
	kind eventKind
	call int
	seq  int
}

// before orders events by (at, seq).
func (e event) before(f event) bool {
	if e.at != f.at {
		return e.at < f.at
	}
	return e.seq < f.seq
}

// events is the run's queue of events.
type events = minHeap[event]

// minHeap is a binary min-heap of T by less (the same at every call),
// typed so that pushing allocates nothing once grown.
type minHeap[T any] []T

func (q *minHeap[T]) push(x T, less func(a, b T) bool) {
	*q = append(*q, x)
	h := *q
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !less(h[i], h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (q *minHeap[T]) pop(less func(a, b T) bool) T {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && less(h[l], h[m]) {
			m = l
		}
		if r < len(h) && less(h[r], h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// Simulate runs lim on the scenario: an M/G/c partner whose C servers take
// the calls of a FIFO queue, a caller that gives up after its deadline
// (the partner then drops the call if it is still queued; a call in
// service runs to its end and holds its server). Arrivals and service
// times depend on the seed only, so every contender sees the same traffic.
func Simulate(sc Scenario, name string, lim Limiter) Run {
	return simulate(sc, name, lim, &queuePartner{sc: sc})
}

// queuePartner is Simulate's M/G/c partner: busy of its C servers in
// service, the other calls admitted waiting in FIFO order. A call whose
// caller gave up is dropped when it reaches the head of the queue; in
// service it runs to its end (evServed) and holds its server.
type queuePartner struct {
	sc      Scenario
	busy    int
	waiting []queuedCall
}

// queuedCall is a call admitted to the partner and its service time.
type queuedCall struct {
	call    int
	service time.Duration
}

func (p *queuePartner) start(l *simLoop, now time.Duration, c queuedCall) {
	p.busy++
	l.push(now+c.service, evServed, c.call)
}

// admitWaiting starts queued calls while the partner has room,
// dropping those whose caller gave up.
func (p *queuePartner) admitWaiting(l *simLoop, now time.Duration) {
	c := p.sc.segment(now).Capacity
	for len(p.waiting) > 0 && p.busy < c {
		w := p.waiting[0]
		p.waiting = p.waiting[1:]
		if !l.calls[w.call].ended {
			p.start(l, now, w)
		}
	}
}

func (p *queuePartner) admit(l *simLoop, now time.Duration, i int, service time.Duration) {
	c := queuedCall{call: i, service: service}
	if p.busy < p.sc.segment(now).Capacity {
		p.start(l, now, c)
	} else {
		p.waiting = append(p.waiting, c)
	}
}

// gaveUp leaves the call where it is: dropped when it reaches the head of
// the queue, or running to its end in service.
func (p *queuePartner) gaveUp(*simLoop, time.Duration, int) {}

func (p *queuePartner) capacityChanged(l *simLoop, now time.Duration) {
	p.admitWaiting(l, now)
}

// fired serves evServed: the call frees its server, is answered unless its
// caller gave up, and the queue moves.
func (p *queuePartner) fired(l *simLoop, e event) {
	p.busy--
	l.answered(e.at, e.call)
	p.admitWaiting(l, e.at)
}
