package adaptivesim

import (
	"math/rand/v2"
	"time"
)

// partnerModel is the partner of a simulation, behind the client side
// that simulate runs: it hears of every call admitted, every call whose
// caller gave up and every change of capacity, serves the events of its
// own kinds, and reports each call it answers with simLoop.answered.
type partnerModel interface {
	// admit takes in call i, admitted at now, with its service time.
	admit(l *simLoop, now time.Duration, i int, service time.Duration)
	// gaveUp hears that the caller of call i gave up at now; the call is
	// already ended on the client side.
	gaveUp(l *simLoop, now time.Duration, i int)
	// capacityChanged hears that a segment ended at now
	// (sc.segment(now).Capacity is the new capacity).
	capacityChanged(l *simLoop, now time.Duration)
	// fired serves an event the partner pushed (a kind simulate does not
	// know).
	fired(l *simLoop, e event)
}

// clientCall is the client side of one call.
type clientCall struct {
	token any
	ended bool // rejected, answered or given up
}

// simLoop is the state simulate shares with the partner: the run, the
// queue of events and the calls as the client sees them.
type simLoop struct {
	lim   Limiter
	run   Run
	q     events
	seq   int
	calls []clientCall
}

// push queues an event; events at the same time fire in the order pushed.
func (l *simLoop) push(at time.Duration, k eventKind, call int) {
	l.seq++
	l.q.push(event{at: at, kind: k, call: call, seq: l.seq}, event.before)
}

// answered ends call i at now, answered in time, unless its caller gave up
// before.
func (l *simLoop) answered(now time.Duration, i int) {
	c := &l.calls[i]
	if c.ended {
		return
	}
	c.ended = true
	l.run.Calls[i].Latency = now - l.run.Calls[i].Sent
	l.lim.Done(c.token, false)
}

// simulate runs lim on the scenario with the partner p: Poisson arrivals at
// the segments' rates, each call's service time and deadline drawn from
// sc.Partner when it arrives (rejected or not, so that the traffic depends
// on the seed only), a caller that gives up at its deadline, the limit
// recorded every sc.Trace. Simulate and SimulatePS are simulate with their
// partners.
func simulate(sc Scenario, name string, lim Limiter, p partnerModel) Run {
	rng := rand.New(rand.NewPCG(sc.Seed, 0xadab7))
	l := &simLoop{lim: lim, run: Run{Name: name}}
	end := sc.End()

	nextArrival := func(now time.Duration) time.Duration {
		rate := sc.segment(now).Rate
		return now + time.Duration(rng.ExpFloat64()/rate*float64(time.Second))
	}
	l.push(nextArrival(0), evArrival, -1)
	l.push(0, evTrace, -1)
	for _, s := range sc.Segments {
		l.push(s.Until, evCapacity, -1)
	}
	for len(l.q) > 0 {
		e := l.q.pop(event.before)
		if e.at >= end {
			break
		}
		lim.Advance(e.at)
		switch e.kind {
		case evArrival:
			service, deadline := sc.Partner.draw(rng)
			l.push(nextArrival(e.at), evArrival, -1)
			token, ok := lim.Try()
			if !ok {
				l.run.Calls = append(l.run.Calls, Call{Sent: e.at, Rejected: true})
				l.calls = append(l.calls, clientCall{ended: true})
				continue
			}
			i := len(l.calls)
			l.calls = append(l.calls, clientCall{token: token})
			l.run.Calls = append(l.run.Calls, Call{Sent: e.at})
			l.push(e.at+deadline, evDeadline, i)
			p.admit(l, e.at, i, service)
		case evDeadline:
			c := &l.calls[e.call]
			if c.ended {
				continue
			}
			c.ended = true
			l.run.Calls[e.call].Latency = e.at - l.run.Calls[e.call].Sent
			l.run.Calls[e.call].TimedOut = true
			lim.Done(c.token, true)
			p.gaveUp(l, e.at, e.call)
		case evCapacity:
			p.capacityChanged(l, e.at)
		case evTrace:
			l.run.Limits = append(l.run.Limits, lim.Limit())
			l.push(e.at+sc.Trace, evTrace, -1)
		default:
			p.fired(l, e)
		}
	}
	return l.run
}
