package adaptivesim

import (
	"math"
	"time"
)

// evPSNext is SimulatePS's next completion: the call field carries the
// generation of the schedule it was computed for, and an event of an older
// generation is stale (the number of calls or the capacity changed since).
const evPSNext eventKind = 100

// psCall is one call in a processor-sharing partner, by the attained
// service at which it finishes (the partner's virtual time V, in ns of
// service time).
type psCall struct {
	finish float64
	call   int
}

// before orders psCalls by finish, then by call (the earlier arrival
// first), so that the run does not depend on the heap's order.
func (c psCall) before(d psCall) bool {
	if c.finish != d.finish {
		return c.finish < d.finish
	}
	return c.call < d.call
}

// SimulatePS runs lim on the scenario with a processor-sharing partner
// instead of Simulate's M/G/c queue: every call admitted is in service at
// once, and the partner's C servers of capacity are shared equally by the
// n calls in it, each call's remaining work decreasing at min(1, C/n) per
// unit of time (a server without admission control whose requests share
// its CPUs: above C calls, all slow down together). A caller gives up at
// its deadline (10× its kind's median), and its call then leaves the
// partner and frees its share (the server cancels the abandoned request).
//
// It is exact on the virtual clock: the partner's virtual time V (the
// service every call present has attained since V = 0) grows at
// min(1, C/n), a call admitted at V₀ with service time s finishes when V
// reaches V₀ + s, and the next completion is recomputed whenever n or C
// changes. The traffic (arrivals, service times, deadlines) is the same as
// Simulate's for the same seed, and a run is deterministic.
//
// It is a development model: the matrix and its goals are measured with
// Simulate; the dev harness (TestDev -dev.ps) measures the contenders on it.
func SimulatePS(sc Scenario, name string, lim Limiter) Run {
	return simulate(sc, name, lim, &psPartner{sc: sc, c: sc.segment(0).Capacity})
}

// psPartner is SimulatePS's partner: n calls sharing c servers, V at the
// time last, and the calls by the V at which they finish (ended ones, given
// up, removed lazily). gen stamps the evPSNext in force.
type psPartner struct {
	sc        Scenario
	finishing minHeap[psCall]
	n, c      int
	v         float64
	last      time.Duration
	gen       int
}

func (p *psPartner) rate() float64 {
	if p.n <= p.c {
		return 1
	}
	return float64(p.c) / float64(p.n)
}

// advance moves V to now at the rate of the n calls and the capacity in
// force since last.
func (p *psPartner) advance(now time.Duration) {
	if p.n > 0 {
		p.v += float64(now-p.last) * p.rate()
	}
	p.last = now
}

// top drops ended calls from the top of the heap; ok is false when no call
// is in the partner.
func (p *psPartner) top(l *simLoop) (psCall, bool) {
	for len(p.finishing) > 0 {
		if h := p.finishing[0]; !l.calls[h.call].ended {
			return h, true
		}
		p.finishing.pop(psCall.before)
	}
	return psCall{}, false
}

// reschedule replaces the next completion after n or C changed.
func (p *psPartner) reschedule(l *simLoop, now time.Duration) {
	p.gen++
	h, ok := p.top(l)
	if !ok {
		return
	}
	wait := time.Duration(math.Ceil(math.Max(0, h.finish-p.v) / p.rate()))
	l.push(now+wait, evPSNext, p.gen)
}

func (p *psPartner) admit(l *simLoop, now time.Duration, i int, service time.Duration) {
	p.advance(now)
	p.finishing.push(psCall{finish: p.v + float64(service), call: i}, psCall.before)
	p.n++
	p.reschedule(l, now)
}

// gaveUp takes the call out of the partner, freeing its share; it is
// dropped from the heap lazily.
func (p *psPartner) gaveUp(l *simLoop, now time.Duration, _ int) {
	p.advance(now)
	p.n--
	p.reschedule(l, now)
}

func (p *psPartner) capacityChanged(l *simLoop, now time.Duration) {
	p.advance(now)
	p.c = p.sc.segment(now).Capacity
	p.reschedule(l, now)
}

// fired serves evPSNext: unless stale (n or C changed since), the calls
// finishing at the current V are answered.
func (p *psPartner) fired(l *simLoop, e event) {
	if e.call != p.gen {
		return
	}
	p.advance(e.at)
	h, ok := p.top(l)
	if !ok {
		return
	}
	// The event was computed for h to finish now: V reaches h.finish (up
	// to rounding) and every call finishing there too finishes now.
	p.v = math.Max(p.v, h.finish)
	for {
		h, ok := p.top(l)
		if !ok || h.finish > p.v {
			break
		}
		p.finishing.pop(psCall.before)
		p.n--
		l.answered(e.at, h.call)
	}
	p.reschedule(l, e.at)
}
