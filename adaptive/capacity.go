package adaptive

import (
	"math"
	"slices"
	"time"
)

// Capacity is this package's own algorithm, the default. It estimates the
// partner's capacity C (the calls it serves at once) with Little's law and
// keeps the limit at or just above it, acting only on evidence. Why it is
// built this way, measured on a matrix of partners, is in
// docs/benchmarks.md ("Adaptive limits").
//
//   - Epochs, not windows, decide. The windows run at one limit are pooled
//     into an epoch; after a change of the limit, the calls granted under
//     the old limit (as many as it allowed) are skipped. An epoch decides
//     nothing before MinCalls calls, and then only what its mean RTT shows
//     beyond Evidence standard errors (from Sample.RTTDev and N, and the
//     error of the no-load RTT itself): a noisy partner makes epochs
//     longer, not cuts larger. Matched samples (plain calls, Watch) carry
//     no RTTDev; their spread is estimated from the means of consecutive
//     windows (see spread), so the plain methods decide on the same
//     evidence as typed calls.
//   - The no-load RTT is never taken from calls that may have queued. It
//     starts unknown; once two epochs in a row at the limit agree, a
//     saturated limit (at least 90 % of it in flight) starts a descent: the
//     limit steps down by 30 % while the RTT falls in proportion (every
//     call queued: a lower limit costs no throughput), and the first step
//     whose RTT falls less than that shows that C was crossed: its RTT is
//     the no-load RTT and C is the last limit × the two RTTs' ratio
//     (Little's law). An RTT that rises instead (a queue still building)
//     restarts the descent; calls that time out (1 % of the epoch or more,
//     in this epoch or the one before it) mean it goes on: their RTTs are
//     cut short at the caller's deadline and cannot show how the RTT fell.
//   - A cut needs evidence proportionate to its size: with queueing proved
//     (the RTT's lower bound above Tolerance × the no-load RTT), the limit
//     is cut to in-flight × no-load RTT / (RTT − one standard error), at
//     most by half; with drops (1 % of the epoch's calls or more) also by
//     Backoff.
//   - The floor rule: cuts must lower the RTT. When the cuts since the limit
//     last grew took 20 % or more off it and the RTT fell by less than a
//     quarter of what they predict, the rise was not queueing (the
//     partner's base latency rose): the cuts are undone and that RTT becomes
//     the no-load RTT. So the limit cannot stay far below a level at which
//     the partner answered at its healthy latency; the controller's
//     MaxCutPerSecond bounds how fast any cut goes.
//   - At the controller's floor (Config.Min) the limit cannot be cut, so
//     the RTT there is the lowest the bulkhead can see, and the floor rule
//     (which needs cuts of 20 %) cannot check the no-load RTT. Two epochs
//     at the floor (the limit not leaving it in between) that ask for a
//     cut it holds back (one that cannot take a permit off), without
//     timeouts and agreeing within 10 %, make the RTT at the floor the
//     no-load RTT (the capacity is forgotten); an epoch at the floor with
//     no queueing proved over 10 × MinCalls calls refines the no-load RTT
//     whatever the capacity estimate. So a no-load RTT learned from a
//     burst of near-instant answers (cached responses, a fast error path),
//     or from before the partner's latency rose, cannot keep the limit at
//     the floor.
//   - Growth needs no proof (it is cheap to take back), but waits until the
//     epoch could have shown a queue of its size: with the RTT within
//     Tolerance and the limit saturated, the limit doubles while no
//     capacity was ever estimated, grows by FastGrowth below 90 % of the
//     estimate, and near it by Growth (at least one permit), a step that
//     doubles with every epoch in a row without a cut. The estimate is
//     forgotten after 20 limits' worth of calls without a cut (C grew).
//     Epochs below the estimate refine the no-load RTT. A limit that is not
//     saturated (a lull, a load below C) holds: there is no evidence of C
//     to converge to.
//
// The zero Capacity is ready to use with its defaults.
type Capacity struct {
	// Growth is the relative growth per epoch near the remembered
	// capacity. Zero means 0.05; values outside (0, 1] are replaced by
	// 0.05.
	Growth float64
	// FastGrowth is the relative growth per epoch far below it. Zero means
	// 0.25; values outside (0, 1] are replaced by 0.25.
	FastGrowth float64
	// Tolerance is the ratio RTT/no-load RTT above which an epoch shows
	// queueing (once proved beyond Evidence standard errors). Zero means
	// 1.05; values not above 1 are replaced by 1.05.
	Tolerance float64
	// Backoff multiplies the limit on drops (see above). Zero means 0.9;
	// values outside (0, 1] are replaced by 0.9.
	Backoff float64
	// Evidence is how many standard errors of the mean RTT a difference
	// must exceed to count. Zero means 4 (an epoch is looked at after every
	// window, so the bound must hold over many looks); values not above 0
	// are replaced by 4.
	Evidence float64
	// MinCalls is the calls an epoch needs before it decides. Zero means
	// 20.
	MinCalls int

	ep        epoch
	noLoad    float64 // ns; 0: unknown
	noLoadW   float64 // the calls behind noLoad, capped
	noLoadVar float64 // variance of one call's RTT in the epochs behind noLoad
	verified  bool    // noLoad comes from an epoch known not to queue
	capacity  float64 // the last estimate of C; 0: none
	known     bool    // a capacity was estimated once
	sinceCut  float64 // calls since the last cut
	step      float64 // the last relative growth near the capacity; 0: none since the last cut
	// cutFrom is the epoch before the first of the cuts since the limit
	// last grew (nil: none), for the floor rule.
	cutFrom *epochSummary
	last    float64 // what the last Update returned; 0: none yet
	descent *epochSummary
	stable  *epochSummary // the last epoch before a descent, to check it is stable
	floor   float64       // the controller's Config.Min (setFloor); 0: unknown
	spread  spread        // of one call's RTT, for Matched samples
	// sp, when set, replaces the cuts and probes once the no-load RTT is
	// known by a set point (see SetPoint)
	sp *setPointState
	// held is the last epoch at the floor whose cut the floor held back
	// (nil: none since the limit was last above it), for the rule at the
	// floor (heldAtFloor)
	held *epochSummary
}

// noLoadMeanVar is the variance of the no-load RTT as an estimate: one
// call's variance over the calls it was measured from.
func (c *Capacity) noLoadMeanVar() float64 { return c.noLoadVar / math.Max(c.noLoadW, 1) }

// spread estimates the variance of one call's RTT for samples that do not
// know it (Sample.Matched: calls through the plain methods or watched,
// whose RTTs are matched to grants). The mean RTTs of two
// consecutive windows of N1 and N2 calls differ by a variance of
// v·(1/N1 + 1/N2), whatever the matching did to single RTTs, so each pair
// gives an estimate of v; differences of consecutive windows also cancel
// a drift of the RTT, and a change of it (a queue building up) only makes
// the estimate larger, which makes decisions more careful, not bolder.
// Until spreadPrior pairs were seen, a spread as wide as the mean
// (coefficient of variation 1) weighs as that many pairs.
type spread struct {
	lastMean, lastN float64 // the previous window; lastN 0: none
	// us holds the last pairs' estimates (ns²), oldest first once full
	us   [spreadMemory]float64
	k    int // pairs seen
	sort [spreadMemory]float64
}

// spreadMemory is the pairs of windows the estimate looks at, spreadPrior
// the pairs before which it leans on the assumed spread (CV 1), and
// chi2Median the median of a χ² variable of one degree of freedom: each
// pair's estimate is v times such a variable, so the median of the pairs'
// estimates over chi2Median estimates v without the pairs that straddle a
// change of the RTT (a queue building up or draining), which the mean
// would follow.
const (
	spreadMemory = 31
	spreadPrior  = 4
	chi2Median   = 0.4549
)

// measured reports whether the estimate rests on enough pairs of windows
// to stop leaning on the assumed spread.
func (p *spread) measured() bool { return p.k >= 2*spreadPrior }

// dev returns the standard deviation of one call's RTT to use for s,
// after learning from s.
func (p *spread) dev(s Sample) time.Duration {
	n := float64(s.N)
	m := rttNanos(s)
	if p.lastN > 0 {
		p.us[p.k%spreadMemory] = (m - p.lastMean) * (m - p.lastMean) / (1/n + 1/p.lastN)
		p.k++
	}
	p.lastMean, p.lastN = m, n
	var v float64
	if p.k < 2*spreadPrior {
		// few pairs: their mean, with the assumed spread as spreadPrior
		// more
		v = spreadPrior * m * m
		for i := range p.k {
			v += p.us[i]
		}
		v /= float64(spreadPrior + p.k)
	} else {
		k := min(p.k, spreadMemory)
		xs := p.sort[:k]
		copy(xs, p.us[:k])
		slices.Sort(xs)
		v = xs[k/2] / chi2Median
	}
	return time.Duration(math.Min(math.Sqrt(v), math.MaxInt64))
}

// epoch pools the windows run at one limit.
type epoch struct {
	limit       float64
	skip        float64 // calls still to skip
	n           float64
	sum, sumSq  float64 // of RTTs (ns), rebuilt from each window's mean and deviation
	maxInFlight int
	drops       int
	elapsed     float64 // ns, of the windows pooled (0 if a sample had none or was per-call)
	timed       float64 // calls of the windows that had an Elapsed (not per-call)
}

// epochSummary is what an epoch showed.
type epochSummary struct {
	limit, mean, se float64
	inFlight        int
	// rate is the calls that finished without a drop per ns (0: unknown)
	rate float64
	// truncated: 1 % of the epoch's calls or more timed out, so their RTTs
	// were cut short at the caller's deadline and the mean understates
	// the queue
	truncated bool
}

func (e *epoch) add(s Sample) {
	n := float64(max(s.N, 1))
	m := rttNanos(s)
	d := float64(s.RTTDev)
	e.n += n
	e.sum += n * m
	e.sumSq += (n-1)*d*d + n*m*m
	e.maxInFlight = max(e.maxInFlight, s.InFlight)
	e.drops += s.Drops
	if s.Elapsed > 0 && !s.PerCall {
		e.elapsed += float64(s.Elapsed)
		e.timed += n - float64(min(s.Drops, s.N))
	}
}

func (e *epoch) summary() epochSummary {
	mean := e.sum / e.n
	v := 0.0
	if e.n > 1 {
		v = max(0, (e.sumSq-e.n*mean*mean)/(e.n-1))
	}
	rate := 0.0
	if e.elapsed > 0 {
		rate = e.timed / e.elapsed
	}
	return epochSummary{limit: e.limit, mean: mean, se: math.Sqrt(v / e.n), inFlight: e.maxInFlight, rate: rate,
		truncated: e.drops > 0 && float64(e.drops) >= 0.01*e.n}
}

// NoLoadRTT returns the current estimate of the partner's RTT without
// queueing, in nanoseconds (0 before it is measured).
func (c *Capacity) NoLoadRTT() float64 { return c.noLoad }

// Update implements Algorithm.
func (c *Capacity) Update(limit float64, s Sample) float64 {
	if c.last == 0 || math.Floor(limit) != math.Floor(c.ep.limit) || c.floor > 0 && limit <= c.floor && c.last < limit {
		// A new limit (ours or the controller's): a new epoch. Its first
		// window is skipped, and so are the calls until as many as were
		// in flight before the change have finished: they were granted
		// under the old limit. A cut below the controller's floor that
		// the controller clamped to the floor also starts one: the limit
		// did not change, but the epoch made its decision, and kept, it
		// would make it again on every window (its timeouts counted
		// forever), so the limit never left the floor once the partner
		// recovered (FuzzAlgorithms, corpus entry
		// capacity_cut_below_min_keeps_its_epoch: Min 49, 4000 healthy
		// windows at the floor).
		if !c.atTheFloor(limit) {
			c.held = nil
		}
		skip := math.Max(c.ep.limit, limit)
		c.restart(limit)
		c.ep.skip = skip - float64(max(s.N, 1))
		return limit
	}
	if s.Matched && s.N > 1 {
		s.RTTDev = c.spread.dev(s)
	}
	if c.ep.skip > 0 {
		c.ep.skip -= float64(max(s.N, 1))
		return c.hold(limit)
	}
	c.ep.add(s)
	minCalls := float64(orDefault(c.MinCalls, 20))
	if c.ep.n < minCalls {
		return c.hold(limit)
	}
	e := c.ep.summary()
	z := param(c.Evidence, 4, 0, math.Inf(1))
	tol := param(c.Tolerance, 1.05, 1, math.Inf(1))
	saturated := float64(e.inFlight) >= math.Max(1, math.Floor(0.9*limit))
	// the bounds count the no-load RTT's own error
	err := z * math.Sqrt(e.se*e.se+c.noLoadMeanVar())
	lo := e.mean - err

	if c.descent != nil {
		return c.descend(limit, e, z)
	}
	c.sinceCut += float64(max(s.N, 1))
	if c.cutFrom != nil && limit < c.cutFrom.limit && e.mean >= 1.1*c.cutFrom.mean {
		// the RTT rose since the cuts began: cutFrom was measured while it
		// changed; check the cuts from here on, from the RTT just now (an
		// epoch that saw the RTT rise averages old and new)
		from := e
		from.mean = math.Max(e.mean, rttNanos(s))
		c.cutFrom = &from
	}
	if c.cutFrom != nil && limit <= 0.8*c.cutFrom.limit {
		// The floor rule: the cuts since cutFrom took 20 % or more off the
		// limit; if the RTT fell by less than a quarter of what they
		// predict, the rise was not queueing (the partner's base latency
		// rose): undo them and take this RTT as the no-load RTT.
		prev := *c.cutFrom
		c.cutFrom = nil
		if e.mean-e.se > prev.mean*(1-(1-limit/prev.limit)/4) && e.mean < 1.1*prev.mean {
			c.noLoad, c.noLoadW, c.noLoadVar = e.mean, c.ep.n, e.se*e.se*c.ep.n
			c.capacity = 0
			if c.sp != nil {
				c.sp.est = 0
			}
			return c.change(prev.limit)
		}
	}
	if c.noLoad == 0 {
		if saturated && limit > c.lowest() && e.truncated {
			// calls time out: far above C, whether or not the queue is
			// still growing; step down by half at once
			c.descent = &e
			return c.change(math.Max(c.lowest(), math.Floor(0.5*limit)))
		}
		if saturated && limit > c.lowest() {
			return c.startDescent(limit, e)
		}
		c.setNoLoad(e, c.ep.n, false)
		return c.restart(limit)
	}
	if c.sp != nil && c.known && c.verified && c.sp.ready(c) {
		return c.setPoint(limit, e, s, z, tol, saturated)
	}
	switch {
	case lo > tol*c.noLoad || e.truncated:
		// Queueing proved: cut to the upper bound of C. Calls that time
		// out (1 % of the epoch or more) are overload whatever the RTTs
		// say (they are cut short at the deadline, and a no-load RTT
		// taken from such epochs would be too long): cut by Backoff.
		inFlight := float64(min(e.inFlight, int(limit)))
		next := limit
		if lo > tol*c.noLoad {
			next = math.Max(limit/2, math.Min(limit, inFlight*c.noLoad/(e.mean-e.se)))
		}
		if e.truncated {
			next = math.Min(next, limit*param(c.Backoff, 0.9, 0, 1))
		}
		c.capacity = math.Min(next, inFlight*c.noLoad/e.mean)
		c.known = true
		if c.cutFrom == nil {
			// the RTT just before the cut: an epoch that saw the RTT rise
			// averages old and new
			from := e
			from.mean = math.Max(e.mean, rttNanos(s))
			c.cutFrom = &from
		}
		c.sinceCut = 0
		c.step = 0
		if c.atTheFloor(limit) && c.atTheFloor(next) && c.heldAtFloor(e) {
			return c.restart(limit)
		}
		return c.change(next)
	case saturated && e.mean <= tol*c.noLoad+err/2:
		// No queueing shown: grow (a growth is cheap to take back), once
		// the epoch could have shown a queue of the growth's size.
		if !c.verified {
			if limit <= c.lowest() {
				c.verified = true // too few calls in flight to queue much
			} else {
				return c.startDescent(limit, e)
			}
		}
		growth := param(c.Growth, 0.05, 0, 1)
		if c.sinceCut > 20*limit {
			// no cut for 20 RTTs' worth of calls: the capacity grew
			c.capacity = 0
		}
		var next float64
		step := c.step
		switch {
		case c.capacity == 0 && !c.known:
			next = 2 * limit // no capacity ever known: double, as a slow start does
		case c.capacity > 0 && limit < 0.9*c.capacity:
			next = math.Min(c.capacity, math.Max(limit+1, limit*(1+param(c.FastGrowth, 0.25, 0, 1))))
		default:
			// near or past the capacity: probe by Growth, a step that
			// doubles with every epoch in a row that shows no queueing
			// (a capacity that grew is found in a few epochs, noise costs
			// one small step)
			step = math.Min(math.Max(c.step*2, growth), 1)
			next = limit + math.Max(1, limit*step)
		}
		if seen := 2 * math.Sqrt(e.se*e.se+c.noLoadMeanVar()); seen > (next/limit-1)*c.noLoad && c.ep.n < 10*minCalls {
			return c.hold(limit)
		}
		// refine the no-load RTT with an epoch below the capacity
		if c.capacity == 0 || limit < c.capacity {
			c.setNoLoad(e, c.ep.n, true)
		}
		c.cutFrom = nil
		c.step = step
		return c.change(next)
	case e.mean <= tol*c.noLoad || c.ep.n >= 10*minCalls && (c.capacity == 0 || limit <= c.capacity || c.atTheFloor(limit)):
		// A lull, or no queueing proved over many calls at a limit not
		// above the capacity, or at the floor (no cut goes below it; kept
		// out, an epoch at the floor above a capacity estimated from an
		// uncertain no-load RTT never refined it, FuzzAlgorithms corpus
		// entries capacity_floor_uncertain_no_load_rtt*): refine the
		// no-load RTT with this epoch (which undoes a no-load RTT that
		// came out low), and start over.
		if c.capacity == 0 || float64(e.inFlight) <= c.capacity || c.atTheFloor(limit) {
			c.setNoLoad(e, c.ep.n, c.verified)
		}
		return c.restart(limit)
	case c.ep.n > 50*minCalls:
		// long undecided: start over, so that old calls do not outweigh
		// new ones
		return c.restart(limit)
	}
	return c.hold(limit)
}

// descentFloor is the limit at which a descent stops: a few calls in
// flight rarely queue, and noise must not walk the limit to the floor.
const descentFloor = 4

// setFloor tells Capacity the controller's Config.Min (the Bulkhead calls
// it once, before the first Update): a descent cannot go below it, so it
// stops there, as it stops at descentFloor. Without it a descent asked for
// a limit under Min forever, the controller kept Min, and the limit never
// left the floor.
func (c *Capacity) setFloor(minLimit int) { c.floor = float64(minLimit) }

// heldAtFloor applies the rule at the floor to epoch e, at the floor,
// whose queue asks for a cut that the floor holds back (it cannot take a
// permit off): such a cut changes nothing, so the RTT cannot fall with it,
// and the floor rule, which looks at the limit, never sees it. When two
// such epochs without timeouts, the limit not leaving the floor in
// between, agree (the RTT at the floor is stable), that RTT becomes the
// no-load RTT and the capacity is forgotten,
// as the floor rule does; heldAtFloor then reports true (no cut). Without
// it, a partner whose latency rose while the limit was at the floor, or a
// no-load RTT learned from a burst of near-instant answers (cached
// responses, a fast error path), kept the limit at the floor for good
// (FuzzAlgorithms, corpus entries capacity_floor_holds_back_every_cut and
// setpoint_floor_*).
func (c *Capacity) heldAtFloor(e epochSummary) bool {
	if c.held == nil || e.truncated || c.held.truncated || !c.agree(e, *c.held) {
		c.held = &e
		return false
	}
	c.held = nil
	c.noLoad, c.noLoadW, c.noLoadVar = e.mean, c.ep.n, e.se*e.se*c.ep.n
	c.capacity = 0
	c.cutFrom = nil
	if c.sp != nil {
		c.sp.est = 0
	}
	return true
}

// atTheFloor reports whether limit gives the permits of the controller's
// floor (it applies the limit's integer part).
func (c *Capacity) atTheFloor(limit float64) bool { return c.floor > 0 && math.Floor(limit) <= c.floor }

// lowest is the limit at which a descent stops.
func (c *Capacity) lowest() float64 { return math.Max(descentFloor, c.floor) }

// startDescent begins the search of C from above at e, once two epochs in
// a row at this limit agree within 10 % (a queue that is still building
// up would make the descent read a crossing).
func (c *Capacity) startDescent(limit float64, e epochSummary) float64 {
	// The errors widen the agreement, but while the spread of matched
	// samples is still the assumed one by no more than 5 %: too wide an
	// assumed spread would make a queue that is still building up look
	// stable.
	if c.stable == nil || c.stable.limit != limit || !c.agree(e, *c.stable) {
		c.stable = &e
		return c.restart(limit)
	}
	c.stable = nil
	c.descent = &e
	return c.change(math.Max(c.lowest(), math.Floor(0.7*limit)))
}

// agree reports whether epochs e and f agree within 10 % and two errors,
// the errors counting for 5 % at most while the spread of matched samples
// is still the assumed one.
func (c *Capacity) agree(e, f epochSummary) bool {
	tol := 2 * math.Hypot(e.se, f.se)
	if c.spread.k > 0 && !c.spread.measured() {
		tol = math.Min(tol, 0.05*f.mean)
	}
	return math.Abs(e.mean-f.mean) <= 0.1*f.mean+tol
}

// descend continues a descent with epoch e at limit.
func (c *Capacity) descend(limit float64, e epochSummary, z float64) float64 {
	prev := *c.descent
	ratio := limit / prev.limit
	// what the RTT would be if every call still queued, with the error of
	// the difference
	inProportion := prev.mean * ratio * 1.1
	// A descent step that goes too far costs one epoch, so a looser bound
	// than Evidence serves; prev's error does not shrink with this epoch.
	z = math.Min(z, 2)
	lo := e.mean - z*math.Hypot(e.se, prev.se*ratio)
	switch {
	case (e.truncated || prev.truncated) && limit > c.lowest():
		// calls still time out, or did in the epoch before: their RTTs
		// are cut short at the deadline, so the two cannot show how the
		// RTT fell; still above C (by half while calls time out)
		c.descent = &e
		step := 0.7
		if e.truncated {
			step = 0.5
		}
		return c.change(math.Max(c.lowest(), math.Floor(step*limit)))
	case e.truncated && limit <= c.lowest():
		// at the lowest limit and calls still time out: their RTTs, cut
		// short at the deadline, are no no-load RTT; wait at this limit
		// for an epoch without timeouts
		c.descent = &e
		return c.restart(limit)
	case e.mean-z*math.Hypot(e.se, prev.se) > 1.1*prev.mean:
		// the RTT rose: the queue was still building up when prev was
		// measured; measure again from here
		c.descent = nil
		return c.startDescent(limit, e)
	case lo > inProportion || limit <= c.lowest():
		// the RTT fell less than in proportion: C lies between the two
		// limits, and this epoch did not queue
		c.descent = nil
		c.setNoLoad(e, c.ep.n, true)
		if prev.mean-z*prev.se <= param(c.Tolerance, 1.05, 1, math.Inf(1))*e.mean {
			c.capacity = 0 // neither queued: C is above both
			return c.change(prev.limit)
		}
		c.capacity = math.Min(prev.limit, math.Max(limit, float64(prev.inFlight)*e.mean/prev.mean))
		c.known = true
		return c.change(c.capacity)
	case e.mean <= inProportion:
		// in proportion: still above C (a step too far costs one epoch:
		// the next one shows the crossing)
		c.descent = &e
		return c.change(math.Max(c.lowest(), math.Floor(0.7*limit)))
	case c.ep.n > 10*float64(orDefault(c.MinCalls, 20)):
		// long undecided: the RTT did not fall in proportion; take it as
		// a crossing
		c.descent = nil
		c.setNoLoad(e, c.ep.n, true)
		c.capacity = 0
		return c.change(prev.limit)
	}
	return c.hold(limit)
}

// setNoLoad folds epoch e's mean RTT into the no-load RTT.
func (c *Capacity) setNoLoad(e epochSummary, n float64, verified bool) {
	v := e.se * e.se * n
	if c.noLoad == 0 || verified && !c.verified {
		c.noLoad, c.noLoadW, c.noLoadVar = e.mean, n, v
	} else {
		w := c.noLoadW + n
		c.noLoad = (c.noLoad*c.noLoadW + e.mean*n) / w
		c.noLoadVar = (c.noLoadVar*c.noLoadW + v*n) / w
		c.noLoadW = math.Min(w, 2000)
	}
	c.verified = c.verified || verified
}

// change returns next as the new limit (a new epoch starts at the next
// Update).
func (c *Capacity) change(next float64) float64 {
	c.last = next
	if math.Floor(next) == math.Floor(c.ep.limit) {
		return c.restart(next)
	}
	return next
}

// restart keeps the limit and starts a new epoch at it.
func (c *Capacity) restart(limit float64) float64 {
	c.ep = epoch{limit: limit}
	c.last = limit
	return limit
}

// hold keeps the limit and the epoch.
func (c *Capacity) hold(limit float64) float64 {
	c.last = limit
	return limit
}

// param returns v, or def when v is zero or outside (lo, hi] (NaN
// included).
func param(v, def, lo, hi float64) float64 {
	if v == 0 || !(v > lo && v <= hi) {
		return def
	}
	return v
}
