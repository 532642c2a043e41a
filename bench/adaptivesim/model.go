package adaptivesim

import (
	"math"
	"math/rand/v2"
	"time"
)

// Scenario is the partner and the load over time.
type Scenario struct {
	Base     time.Duration // median service time of one call (base latency)
	Sigma    float64       // log-normal shape of the service time
	Deadline time.Duration // the client gives up after this long
	Segments []Segment
	Seed     uint64
	Trace    time.Duration // how often the limit is recorded
}

// Segment is a stretch of time with a constant capacity and load.
type Segment struct {
	Until    time.Duration // end of the segment (start: end of the previous one)
	Capacity int           // calls the partner serves at once
	Rate     float64       // arrivals per second (Poisson)
}

// DefaultScenario: base latency 100 ms, capacity 100 (1000 calls/s), load
// 1.5x capacity except two lulls at 0.5x, capacity down to 10 from 25 s to
// 40 s, deadline 1 s.
func DefaultScenario() Scenario {
	return Scenario{
		Base: 100 * time.Millisecond, Sigma: 0.1, Deadline: time.Second, Seed: 1, Trace: 10 * time.Millisecond,
		Segments: []Segment{
			{Until: 10 * time.Second, Capacity: 100, Rate: 1500},
			{Until: 15 * time.Second, Capacity: 100, Rate: 500},
			{Until: 25 * time.Second, Capacity: 100, Rate: 1500},
			{Until: 40 * time.Second, Capacity: 10, Rate: 1500},
			{Until: 55 * time.Second, Capacity: 100, Rate: 1500},
			{Until: 60 * time.Second, Capacity: 100, Rate: 500},
		},
	}
}

// End is when the scenario ends.
func (sc Scenario) End() time.Duration { return sc.Segments[len(sc.Segments)-1].Until }

// segment returns the segment in force at t.
func (sc Scenario) segment(t time.Duration) Segment {
	for _, s := range sc.Segments {
		if t < s.Until {
			return s
		}
	}
	return sc.Segments[len(sc.Segments)-1]
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
)

type event struct {
	at   time.Duration
	kind eventKind
	call int
	seq  int
}

// events is a min-heap of events by (at, seq), typed so that pushing
// allocates nothing once grown.
type events []event

func (q events) less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (q *events) push(e event) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (q *events) pop() event {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, min := 2*i+1, 2*i+2, i
		if l < len(h) && h.less(l, min) {
			min = l
		}
		if r < len(h) && h.less(r, min) {
			min = r
		}
		if min == i {
			break
		}
		h[i], h[min] = h[min], h[i]
		i = min
	}
	*q = h
	return top
}

// partnerCall is the run's state of one admitted call.
type partnerCall struct {
	service time.Duration
	token   any
	ended   bool // answered or given up, as the client sees it
}

// Simulate runs lim on the scenario. Arrivals and service times depend on
// the seed only, so every contender sees the same traffic.
func Simulate(sc Scenario, name string, lim Limiter) Run {
	rng := rand.New(rand.NewPCG(sc.Seed, 0xadab7))
	run := Run{Name: name}
	var q events
	seq := 0
	push := func(at time.Duration, k eventKind, call int) {
		seq++
		q.push(event{at: at, kind: k, call: call, seq: seq})
	}
	var calls []partnerCall
	var waiting []int // FIFO inside the partner
	busy := 0
	end := sc.End()

	nextArrival := func(now time.Duration) time.Duration {
		rate := sc.segment(now).Rate
		return now + time.Duration(rng.ExpFloat64()/rate*float64(time.Second))
	}
	start := func(now time.Duration, i int) {
		busy++
		push(now+calls[i].service, evServed, i)
	}
	// admitWaiting starts queued calls while the partner has room.
	admitWaiting := func(now time.Duration) {
		for len(waiting) > 0 && busy < sc.segment(now).Capacity {
			i := waiting[0]
			waiting = waiting[1:]
			start(now, i)
		}
	}
	push(nextArrival(0), evArrival, -1)
	push(0, evTrace, -1)
	for _, s := range sc.Segments { // capacity changes: let waiting calls in
		push(s.Until, evTrace, -2)
	}
	for len(q) > 0 {
		e := q.pop()
		if e.at >= end {
			break
		}
		lim.Advance(e.at)
		switch e.kind {
		case evArrival:
			service := time.Duration(float64(sc.Base) * math.Exp(sc.Sigma*rng.NormFloat64()))
			push(nextArrival(e.at), evArrival, -1)
			token, ok := lim.Try()
			if !ok {
				run.Calls = append(run.Calls, Call{Sent: e.at, Rejected: true})
				calls = append(calls, partnerCall{ended: true})
				continue
			}
			i := len(calls)
			calls = append(calls, partnerCall{service: service, token: token})
			run.Calls = append(run.Calls, Call{Sent: e.at})
			push(e.at+sc.Deadline, evDeadline, i)
			if busy < sc.segment(e.at).Capacity {
				start(e.at, i)
			} else {
				waiting = append(waiting, i)
			}
		case evServed:
			busy--
			c := &calls[e.call]
			if !c.ended {
				c.ended = true
				run.Calls[e.call].Latency = e.at - run.Calls[e.call].Sent
				lim.Done(c.token, false)
			}
			admitWaiting(e.at)
		case evDeadline:
			c := &calls[e.call]
			if !c.ended {
				c.ended = true
				run.Calls[e.call].Latency = sc.Deadline
				run.Calls[e.call].TimedOut = true
				lim.Done(c.token, true)
			}
		case evTrace:
			if e.call == -2 {
				admitWaiting(e.at)
				continue
			}
			run.Limits = append(run.Limits, lim.Limit())
			push(e.at+sc.Trace, evTrace, -1)
		}
	}
	return run
}
