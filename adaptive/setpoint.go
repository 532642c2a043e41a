package adaptive

import "math"

// SetPoint is a set-point controller: it estimates the partner's capacity
// C by Little's law (C ≈ the rate of calls × the no-load RTT) and holds the
// limit at Target × that estimate, instead of probing above it. It is not
// the default: on the matrix of docs/benchmarks.md ("Adaptive limits") it
// holds the limit in the band around C on low-spread partners at overload,
// where Capacity's probes leave it, but it misses the goodput goal in more
// cells. Use it for partners whose latency varies little.
//
// It runs Capacity (with its defaults) until both the no-load RTT and a
// first capacity are known and the no-load RTT's standard error is at most
// 2 % of it (on a noisy partner, possibly never: SetPoint is then
// Capacity). From then on, every epoch (Capacity's: the windows run at one
// limit, the calls granted under the previous one skipped) is decided by
// these rules, in this order:
//
//   - The estimate of this epoch is its rate of calls that finished
//     without a drop (Sample.N and Sample.Elapsed) × the no-load RTT's
//     upper bound (plus two standard errors): the partner's busy servers.
//     A C estimated too low feeds on itself (fewer calls, a lower rate), one
//     too high only costs a queue, so the bound errs high. Samples without
//     an Elapsed, and per-call ones (Sample.PerCall), use in-flight ×
//     no-load RTT / RTT.
//   - A queue shows when the epoch's mean RTT, less one standard error of
//     it and of the no-load RTT, exceeds Tolerance (1.05) × the no-load RTT
//     at a reached limit (90 % of it in flight), or is proved beyond
//     Evidence (4) standard errors at any limit, or 1 % of the calls timed
//     out at a reached limit.
//   - The estimate moves 30 % of the way to the epoch's, all of it when a
//     proved queue differs by more than 25 % (the capacity changed); it
//     moves down only when a queue shows: without one, the rate is the load,
//     not the capacity.
//   - At a reached limit with no queue (mean RTT within the no-load RTT's
//     upper bound), the estimate is at least the calls in flight, and the
//     limit grows by at least one permit and by a step that starts at 10 %
//     and doubles with every such epoch in a row (up to 100 %).
//   - Below a reached limit with no queue, the limit leaves room for the
//     concurrency in use to double (2 × the calls in flight).
//   - The limit is Target × the estimate (and at least the estimate + 1),
//     but it is never lowered unless a queue shows, never while the limit is
//     not reached unless a queue is proved, by at most half per epoch, and
//     with timeouts at a reached limit by Backoff (0.9) at least.
//   - Probes: at a reached limit that this rule set neither grows nor
//     cuts (the limit keeps its permits), without timeouts and with the
//     mean RTT above the no-load RTT's upper bound, the set point cannot
//     tell a queue from a no-load RTT that is a few per cent too low (the
//     partner slowed down): by Little's law both give the same rate, and
//     below about 100 permits Target × the estimate rounds down to the
//     same limit, which held for good. After 16 such epochs in a row at
//     one limit, agreeing within 10 %, the set point probes one permit
//     above. When the RTT at the probe rose by less than a quarter of the
//     calls in flight's rise and did not fall (two standard errors of both
//     epochs counted against it), the RTT does not follow the limit: it
//     becomes the no-load RTT, and the estimate is at least the calls in
//     flight. Otherwise a queue follows the limit: the probe is undone
//     (not a cut for the floor rule), and the next one waits twice as many
//     epochs (up to 64). At the set point itself (the limit a few per
//     cent above C) such probes find the queue.
//   - Capacity's floor rule holds: cuts that took 20 % off the limit
//     without lowering the RTT are undone, and that RTT becomes the no-load
//     RTT. So does its rule at the controller's floor (Config.Min): two
//     epochs at the floor (the limit not leaving it in between) for which
//     the set point asks for the floor or less while a queue shows, or
//     while the limit is reached with the mean RTT above the no-load RTT's
//     upper bound (no queue proved, no growth either), without timeouts
//     and at an RTT that stayed within 10 %, make that RTT the no-load
//     RTT.
//
// The no-load RTT is refined only by epochs with no queue whose calls in
// flight stayed within 80 % of the estimate (the partner could not have
// queued them). The zero SetPoint is ready to use with its defaults; like
// every Algorithm, a SetPoint serves one bulkhead.
type SetPoint struct {
	// Target is the limit as a multiple of the estimated capacity. Zero
	// means 1.06; values not above 1 are replaced by 1.06.
	Target float64

	c Capacity
}

// Rules of SetPoint (see its doc comment); the numbers were chosen on the
// matrix of bench/adaptivesim.
const (
	setPointTarget = 1.06 // default Target
	setPointReady  = 0.02 // the no-load RTT's largest relative standard error
	setPointMove   = 0.3  // the fraction of the gap the estimate moves
	setPointJump   = 0.25 // a proved change this large is taken at once
	setPointStep   = 0.1  // the first growth step with no queue
	setPointRoom   = 2    // room below a limit not reached, × calls in flight
	setPointKeep   = 0.8  // epochs within this × the estimate refine the no-load RTT
	setPointProbe  = 16   // epochs in a row in the zone (see probe) before a probe
	setPointWaits  = 64   // the most epochs a probe waits after probes found queues
)

// setPointState is what SetPoint keeps beside Capacity's state.
type setPointState struct {
	target float64
	est    float64 // the estimate of C; 0: none yet
	step   float64 // the last growth step with no queue; 0: none in a row
	on     bool    // the set point decides (see ready)
	// zone is the first of the epochs in a row at a reached limit that
	// neither grows nor is cut, with the RTT above the no-load RTT's upper
	// bound (nil: none), zoneN how many, wait how many a probe needs (0:
	// setPointProbe), probe the epoch before a probe in progress (nil:
	// none)
	zone  *epochSummary
	zoneN int
	wait  int
	probe *epochSummary
}

// Update implements Algorithm.
func (p *SetPoint) Update(limit float64, s Sample) float64 {
	if p.c.sp == nil {
		p.c.sp = &setPointState{target: param(p.Target, setPointTarget, 1, math.Inf(1))}
	}
	return p.c.Update(limit, s)
}

// setFloor passes the controller's Config.Min on to Capacity.
func (p *SetPoint) setFloor(minLimit int) { p.c.setFloor(minLimit) }

// NoLoadRTT returns the current estimate of the partner's RTT without
// queueing, in nanoseconds (0 before it is measured).
func (p *SetPoint) NoLoadRTT() float64 { return p.c.noLoad }

// EstimatedCapacity returns the set point's current estimate of the
// partner's capacity C, 0 while Capacity's rules still decide.
func (p *SetPoint) EstimatedCapacity() float64 {
	if p.c.sp == nil || !p.c.sp.on {
		return 0
	}
	return p.c.sp.est
}

// ready reports whether the no-load RTT is known well enough for the set
// point (its standard error at most setPointReady of it); until then
// Capacity's rules decide. Once ready, it stays so.
func (sp *setPointState) ready(c *Capacity) bool {
	if !sp.on && math.Sqrt(c.noLoadMeanVar()) <= setPointReady*c.noLoad {
		sp.on = true
		sp.est = 0 // start from Capacity's estimate
	}
	return sp.on
}

// setPoint decides epoch e at limit (see SetPoint); z and tol are
// Capacity's Evidence and Tolerance, saturated reports a reached limit.
func (c *Capacity) setPoint(limit float64, e epochSummary, s Sample, z, tol float64, saturated bool) float64 {
	sp := c.sp
	if sp.est == 0 {
		sp.est = c.capacity
	}
	undo := c.probed(limit, e, saturated)
	inFlight := float64(min(e.inFlight, int(limit)))
	seS := math.Sqrt(c.noLoadMeanVar())
	err := math.Hypot(e.se, seS)
	sHi := c.noLoad + 2*seS
	// by the RTT: in-flight × no-load RTT / RTT, with the most calls in
	// flight, which overstates C when the calls in flight vary
	byRTT := math.Min(inFlight, inFlight*sHi/e.mean)
	est := byRTT
	if e.rate > 0 {
		est = math.Min(inFlight, e.rate*sHi) // the busy servers
	}
	proven := e.truncated && saturated || e.mean-z*err > tol*c.noLoad
	shows := proven || saturated && e.mean-err > tol*c.noLoad
	unqueued := saturated && !shows && e.mean <= sHi
	move := setPointMove
	if sp.est == 0 || proven && math.Abs(est-sp.est) > setPointJump*sp.est {
		move = 1
	}
	switch {
	case unqueued:
		// no queue at this many calls in flight: C is at least that (the
		// rate also counts the gaps between calls)
		sp.est = math.Max(sp.est, math.Max(est, byRTT))
	case shows || est > sp.est:
		sp.est += move * (est - sp.est)
	}
	if !shows && float64(e.inFlight) <= setPointKeep*sp.est {
		c.setNoLoad(e, c.ep.n, c.verified)
	}
	next := math.Max(sp.target*sp.est, sp.est+1)
	if unqueued {
		sp.step = math.Min(math.Max(2*sp.step, setPointStep), 1)
		next = math.Max(next, math.Max(math.Floor(limit)+1, limit*(1+sp.step)))
	} else {
		sp.step = 0
	}
	if !saturated && !shows && e.mean <= sHi {
		next = math.Max(next, setPointRoom*float64(e.inFlight))
	}
	if !shows || !saturated && !proven {
		next = math.Max(next, limit)
	}
	if undo {
		next = math.Min(next, sp.probe.limit)
		sp.probe = nil
	}
	if saturated && !e.truncated && !unqueued && !undo && math.Floor(next) == math.Floor(limit) {
		// no growth, no cut: a queue or a no-load RTT a little low; probe
		// above (see SetPoint)
		if sp.inZone(limit, e, c) {
			sp.probe = &e
			next = math.Floor(limit) + 1
		}
	} else {
		sp.zone, sp.zoneN = nil, 0
	}
	next = math.Max(next, limit/2)
	if e.truncated && saturated {
		next = math.Min(next, limit*param(c.Backoff, 0.9, 0, 1))
	}
	// the rule at the controller's floor: a queue there that no cut can
	// shorten, or a reached limit held there whose RTT is above the
	// no-load RTT's upper bound, queue or not (no growth either)
	if (shows || saturated && !unqueued) && c.atTheFloor(limit) && c.atTheFloor(next) && c.heldAtFloor(e) {
		return c.restart(limit)
	}
	// the floor rule (see Update) checks the cuts from the limit before the
	// first of them, until the limit is back above it
	if next < limit && c.cutFrom == nil && !undo {
		from := e
		from.mean = math.Max(e.mean, rttNanos(s))
		c.cutFrom = &from
	}
	if c.cutFrom != nil && next > c.cutFrom.limit {
		c.cutFrom = nil
	}
	return c.change(next)
}

// inZone counts epoch e at limit, one that neither grows nor cuts a
// reached limit (see SetPoint, Probes), and reports whether it is time for
// a probe: sp.wait such epochs in a row at limit that agree within 10 %
// (see Capacity.agree).
func (sp *setPointState) inZone(limit float64, e epochSummary, c *Capacity) bool {
	if sp.zone == nil || math.Floor(sp.zone.limit) != math.Floor(limit) || !c.agree(e, *sp.zone) {
		sp.zone, sp.zoneN = &e, 0
	}
	sp.zoneN++
	if sp.zoneN < max(sp.wait, setPointProbe) {
		return false
	}
	sp.zone, sp.zoneN = nil, 0
	return true
}

// probed decides epoch e at limit after a probe (see SetPoint) and
// reports whether the probe is to be undone. The probe raised the calls
// in flight by a ratio; a queue raises the RTT in proportion. When the
// RTT rose by less than a quarter of that (with the errors of both
// epochs), the RTT did not follow the limit: it is the no-load RTT (and
// the partner served these calls in flight without a queue). Otherwise
// it followed: a queue, the probe is undone and the next one waits twice
// as long. A probe the limit did not follow (the controller's Max or a
// cut), or an epoch not reached or with timeouts, shows neither.
func (c *Capacity) probed(limit float64, e epochSummary, saturated bool) bool {
	sp := c.sp
	p := sp.probe
	if p == nil {
		return false
	}
	if math.Floor(limit) <= math.Floor(p.limit) || !saturated || e.truncated || p.inFlight == 0 {
		sp.probe = nil
		return false
	}
	rise := float64(min(e.inFlight, int(limit)))/float64(p.inFlight) - 1
	err := 2 * math.Hypot(e.se, p.se)
	if rise > 0 && e.mean+err <= p.mean*(1+rise/4) && e.mean+err >= p.mean {
		sp.probe = nil
		sp.wait = 0
		c.noLoad, c.noLoadW, c.noLoadVar = e.mean, c.ep.n, e.se*e.se*c.ep.n
		sp.est = math.Max(sp.est, float64(min(e.inFlight, int(limit))))
		return false
	}
	sp.wait = min(2*max(sp.wait, setPointProbe), setPointWaits)
	return true
}
