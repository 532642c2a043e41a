package main

import "time"

// recorder turns what the bulkheads do into the statistics of a run. Its
// methods are called from any goroutine.
type recorder struct {
	walmart, healthy *class
	slowT, healthyT  *series
	tl               timeline
}

func (r *recorder) of(p *partner) (*class, *series) {
	if p.slow {
		return r.walmart, r.slowT
	}
	return r.healthy, r.healthyT
}

func (r *recorder) permitted(p *partner, waited bool) {
	c, _ := r.of(p)
	c.permitted.Add(1)
	if waited {
		c.queued.Add(1)
	}
}

func (r *recorder) rejected(p *partner, at time.Time) {
	c, s := r.of(p)
	c.rejected.Add(1)
	if i, ok := r.tl.index(at); ok {
		s.rejected[i].Add(1)
	}
}

func (r *recorder) done(p *partner, sent, at time.Time) {
	c, s := r.of(p)
	d := at.Sub(sent)
	c.latency.record(d)
	if i, ok := r.tl.index(at); ok {
		s.latency[i].record(d)
	}
}
