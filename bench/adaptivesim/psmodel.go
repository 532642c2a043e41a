package adaptivesim

import (
	"math"
	"math/rand/v2"
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
	rng := rand.New(rand.NewPCG(sc.Seed, 0xadab7))
	run := Run{Name: name}
	var q events
	seq := 0
	push := func(at time.Duration, k eventKind, call int) {
		seq++
		q.push(event{at: at, kind: k, call: call, seq: seq}, event.before)
	}
	type state struct {
		token any
		ended bool // answered or given up: out of the partner
	}
	var calls []state
	var finishing minHeap[psCall] // the calls in the partner, ended ones removed lazily
	n := 0                        // calls in the partner
	c := sc.segment(0).Capacity
	v, last := 0.0, time.Duration(0) // V at the time last
	gen := 0
	end := sc.End()

	rate := func() float64 {
		if n <= c {
			return 1
		}
		return float64(c) / float64(n)
	}
	// advance moves V to now at the rate of the n calls and the capacity
	// in force since last.
	advance := func(now time.Duration) {
		if n > 0 {
			v += float64(now-last) * rate()
		}
		last = now
	}
	// top drops ended calls from the top of the heap; ok is false when
	// no call is in the partner.
	top := func() (psCall, bool) {
		for len(finishing) > 0 {
			if h := finishing[0]; !calls[h.call].ended {
				return h, true
			}
			finishing.pop(psCall.before)
		}
		return psCall{}, false
	}
	// reschedule replaces the next completion after n or C changed.
	reschedule := func(now time.Duration) {
		gen++
		h, ok := top()
		if !ok {
			return
		}
		wait := time.Duration(math.Ceil(math.Max(0, h.finish-v) / rate()))
		push(now+wait, evPSNext, gen)
	}
	nextArrival := func(now time.Duration) time.Duration {
		rate := sc.segment(now).Rate
		return now + time.Duration(rng.ExpFloat64()/rate*float64(time.Second))
	}
	push(nextArrival(0), evArrival, -1)
	push(0, evTrace, -1)
	for _, s := range sc.Segments {
		push(s.Until, evCapacity, -1)
	}
	for len(q) > 0 {
		e := q.pop(event.before)
		if e.at >= end {
			break
		}
		lim.Advance(e.at)
		switch e.kind {
		case evArrival:
			service, deadline := sc.Partner.draw(rng)
			push(nextArrival(e.at), evArrival, -1)
			token, ok := lim.Try()
			if !ok {
				run.Calls = append(run.Calls, Call{Sent: e.at, Rejected: true})
				calls = append(calls, state{ended: true})
				continue
			}
			advance(e.at)
			i := len(calls)
			calls = append(calls, state{token: token})
			run.Calls = append(run.Calls, Call{Sent: e.at})
			push(e.at+deadline, evDeadline, i)
			finishing.push(psCall{finish: v + float64(service), call: i}, psCall.before)
			n++
			reschedule(e.at)
		case evPSNext:
			if e.call != gen {
				continue // stale: n or C changed since
			}
			advance(e.at)
			h, ok := top()
			if !ok {
				continue
			}
			// The event was computed for h to finish now: V reaches
			// h.finish (up to rounding) and every call finishing there
			// too finishes now.
			v = math.Max(v, h.finish)
			for {
				h, ok := top()
				if !ok || h.finish > v {
					break
				}
				finishing.pop(psCall.before)
				calls[h.call].ended = true
				n--
				run.Calls[h.call].Latency = e.at - run.Calls[h.call].Sent
				lim.Done(calls[h.call].token, false)
			}
			reschedule(e.at)
		case evDeadline:
			st := &calls[e.call]
			if st.ended {
				continue
			}
			advance(e.at)
			st.ended = true // leaves the partner; dropped from the heap lazily
			n--
			run.Calls[e.call].Latency = e.at - run.Calls[e.call].Sent
			run.Calls[e.call].TimedOut = true
			lim.Done(st.token, true)
			reschedule(e.at)
		case evCapacity:
			advance(e.at)
			c = sc.segment(e.at).Capacity
			reschedule(e.at)
		case evTrace:
			run.Limits = append(run.Limits, lim.Limit())
			push(e.at+sc.Trace, evTrace, -1)
		}
	}
	return run
}
