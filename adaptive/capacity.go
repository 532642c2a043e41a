package adaptive

import (
	"fmt"
	"math"
)

// DebugHook is temporary.
var DebugHook func(string)

// Capacity is this package's own algorithm, the default. It estimates the
// partner's capacity C (the calls it serves at once) and keeps the limit at
// (1 + Headroom) × C, acting only on evidence. Why it is built this way,
// measured on a matrix of partners, is in docs/benchmarks.md ("Adaptive
// limits").
//
//   - The estimate is a balance of the partner's busy time. A partner with C
//     servers serves min(n, C) calls while n are in flight, so over a window
//     it is busy for ∫min(n, C)dt, and that busy time is also the service
//     time of the calls it served: their count × the no-load RTT.
//     Sample.InFlightTime gives the first for any C, the count the second,
//     and C is where they meet. The balance holds at any load and across
//     changes of the limit (no transient to skip), needs no per-call RTT
//     (plain calls give only the mean), and determines C whenever calls
//     queued inside the partner; with no queue, it only says that C is at
//     least about the calls that were in flight.
//   - Evidence: the bounds of C carry Evidence standard errors of the
//     service time summed over the calls, the spread measured from window
//     to window (the residuals of the balance), so plain calls get a true
//     spread too and a noisy partner makes decisions slower, not larger.
//     The estimate changes only when a pool of windows contradicts it;
//     pools that agree refine it.
//   - The headroom is the probe: at (1 + Headroom) × C a small queue stands
//     inside the partner while the load is at or above C, which keeps C
//     observable without stepping above it on purpose (a limit at C would
//     show no queue and learn nothing), and it is the margin a load near C
//     needs for its bursts.
//   - The no-load RTT is never taken from calls that may have queued. It
//     starts unknown and is learnt by comparing throughput: the limit steps
//     down (to a quarter, at least 3 permits) until the throughput falls;
//     such an epoch served fewer calls than the partner could, so none of
//     them queued. Once C is known, an epoch at 80 % of it (no queue
//     either) refines the no-load RTT until it is known to within a few per
//     cent.
//   - Growth needs no queue at a limit that binds: the limit doubles until C
//     is first seen, and later grows to (1 + Headroom) × the calls in
//     flight, by steps that double after two in a row. A limit that does
//     not bind (a load below C) holds: there is no evidence of C, and the
//     limit stays above the calls in use.
//   - The floor rule: a cut must keep the throughput. When cuts took 20 %
//     or more off the limit, a queue still shows and the throughput fell in
//     proportion, the partner was not saturated but slower (its base
//     latency rose): the no-load RTT is stale. The cuts are undone and the
//     no-load RTT is learnt again.
//
// The zero Capacity is ready to use with its defaults.
type Capacity struct {
	// Headroom is how far above the estimated capacity the limit is kept:
	// the limit is (1 + Headroom) × C. Zero means 0.1; values outside
	// (0, 1] are replaced by 0.1.
	Headroom float64
	// Evidence is how many standard errors a difference must exceed to
	// count. Zero means 3; values not above 0 are replaced by 3.
	Evidence float64
	// MinCalls is the calls a pool of windows needs before it decides.
	// Zero means 20.
	MinCalls int

	floor float64 // the controller's Config.Min (setFloor); 0: unknown

	started  bool
	ep       capEpoch
	learning bool        // the no-load RTT is being learnt (stepping down)
	chase    bool        // learning: a queue started it, at a limit that did not bind
	ref      *epochStats // learning: the epoch at the limit above

	// The no-load RTT: its mean in ns (0: unknown), the calls behind it,
	// and whether it comes from an epoch known not to have queued.
	s0, s0N  float64
	verified bool
	// v is the variance of one call's service time (ns²), vW its weight
	// (degrees of freedom, capped so that it follows the partner).
	v, vW float64

	// The capacity estimate and its variance (calls²).
	c, cVar float64
	known   bool // c is current
	seen    bool // a capacity was estimated once
	grows   int  // growth steps in a row
	// clean is the most calls in flight at which the partner was shown not
	// to queue (a lower bound of C); epochs below it refine the no-load
	// RTT.
	clean float64
	// refine: an epoch at refineLimit (80 % of C) refines the no-load RTT.
	refine      bool
	refineLimit float64
	// The floor rule: cutFrom is the first epoch after the first of the
	// cuts in a row (nil: none yet), which cutPending says happened.
	cutFrom    *epochStats
	cutPending bool
	cutBefore  float64 // the limit before the first cut
}

// capEpoch pools windows. While running, it spans changes of the limit:
// the balance holds whatever the limits were.
type capEpoch struct {
	limit    float64
	skip     float64 // calls still to skip (learning and refining)
	n, drops float64
	sum      float64 // of RTTs, ns
	devSq    float64 // Σ (N−1)·RTTDev² of the windows with a known RTTDev
	devN     float64 // Σ (N−1) of those windows
	dur      float64 // ns
	prof     []float64
	binding  bool
	// Σ N·m² over the windows of mean RTT m, and their count: the spread
	// of the window means, for the spread of one call when RTTDev is not
	// known (batch means)
	nmm float64
	k   int
}

// epochStats is what an epoch showed.
type epochStats struct {
	limit float64
	n     float64 // calls served (finished, less the drops)
	mean  float64 // RTT, ns
	dev   float64 // per-call standard deviation of the RTT, ns (0: unknown)
	x     float64 // throughput, served calls per ns
	inUse float64 // calls in flight, averaged over time

	binding bool
	prof    []float64
	nmm     float64 // see capEpoch
	k       int
	sum     float64 // of the RTTs of every call finished, ns
	dur     float64 // ns
}

// NoLoadRTT returns the current estimate of the partner's RTT without
// queueing, in nanoseconds (0 before it is measured).
func (c *Capacity) NoLoadRTT() float64 { return c.s0 }

// Estimate returns the current estimate of the partner's capacity (the
// calls it serves at once), and false while there is none.
func (c *Capacity) Estimate() (float64, bool) { return c.c, c.known }

// setFloor tells Capacity the controller's Config.Min (the Bulkhead calls
// it once, before the first Update): a step down to learn the no-load RTT
// stops there.
func (c *Capacity) setFloor(minLimit int) { c.floor = float64(minLimit) }

func (c *Capacity) headroom() float64 { return param(c.Headroom, 0.1, 0, 1) }
func (c *Capacity) z() float64        { return param(c.Evidence, 3, 0, math.Inf(1)) }
func (c *Capacity) minCalls() float64 { return float64(max(orDefault(c.MinCalls, 20), 1)) }

// Update implements Algorithm.
func (c *Capacity) Update(limit float64, s Sample) float64 {
	if !c.started {
		// the calls in flight before the first window were granted at
		// this limit too: no skip
		c.started, c.learning = true, true
		c.ep = capEpoch{limit: limit}
	}
	if math.Floor(limit) != math.Floor(c.ep.limit) {
		if c.learning || c.refine {
			// calls granted under the old limit are still finishing: skip
			// as many as it allowed
			c.ep = capEpoch{limit: limit, skip: math.Max(c.ep.limit, limit)}
		} else {
			c.ep.limit, c.ep.binding = limit, false
		}
	}
	if c.ep.skip > 0 {
		// skip the windows until as many calls as the old limit allowed
		// finished, and the window after: it began before they did
		c.ep.skip -= float64(max(s.N, 1))
		if c.ep.skip <= 0 {
			c.ep.skip = -1
		}
		return limit
	}
	if c.ep.skip < 0 {
		c.ep.skip = 0
		return limit
	}
	c.add(s, limit)
	switch {
	case c.learning:
		return c.learn(limit)
	case c.refine:
		return c.refining(limit)
	}
	return c.run(limit)
}

// add pools sample s into the epoch.
func (c *Capacity) add(s Sample, limit float64) {
	e := &c.ep
	n := float64(max(s.N, 1))
	e.n += n
	e.drops += float64(s.Drops)
	e.sum += n * rttNanos(s)
	if s.RTTDev > 0 && s.N > 1 {
		d := float64(s.RTTDev)
		e.devSq += (n - 1) * d * d
		e.devN += n - 1
	}
	e.dur += float64(s.Duration)
	for k, t := range s.InFlightTime {
		if t <= 0 {
			continue
		}
		if k >= len(e.prof) {
			e.prof = append(e.prof, make([]float64, k+1-len(e.prof))...)
		}
		e.prof[k] += float64(t)
	}
	if float64(s.InFlight) >= bindingLevel(limit) {
		e.binding = true
	}
	m := rttNanos(s)
	e.nmm += n * m * m
	e.k++
}

// bindingLevel is the in-flight count at which a limit counts as binding
// (the demand reached it): the limit, less a tenth of it (at least 1), plus
// one.
func bindingLevel(limit float64) float64 {
	l := math.Floor(limit)
	return l - math.Max(1, math.Floor(0.1*l)) + 1
}

// stats sums the epoch up.
func (e *capEpoch) stats() epochStats {
	served := math.Max(e.n-e.drops, 1)
	st := epochStats{limit: e.limit, n: served, mean: e.sum / math.Max(e.n, 1), binding: e.binding, prof: e.prof, nmm: e.nmm, k: e.k,
		sum: e.sum, dur: e.dur}
	if e.devN > 0 {
		st.dev = math.Sqrt(e.devSq / e.devN)
	}
	if e.dur > 0 {
		st.x = served / e.dur
		in := 0.0
		for k, t := range e.prof {
			in += float64(k) * t
		}
		st.inUse = in / e.dur
	}
	return st
}

// learn runs while the no-load RTT is unknown: it compares the throughput
// of epochs at decreasing limits.
func (c *Capacity) learn(limit float64) float64 {
	e := &c.ep
	if e.n < c.minCalls() || e.dur == 0 {
		return limit
	}
	es := e.stats()
	z := math.Min(c.z(), 2) // a wrong step costs one epoch
	if c.ref == nil {
		if !es.binding && !c.chase {
			// The demand fits under the limit: nothing says how many
			// calls the partner serves. Take the RTT as the no-load RTT,
			// unverified (a binding limit or a queue learns it again),
			// once the epoch lasted 10 mean RTTs: the first epoch has no
			// skip, and its first finished calls are the short ones.
			if e.dur < 10*es.mean {
				return limit
			}
			c.setS0(es, false)
			return c.startRun(limit)
		}
		if es.n < 2*c.minCalls() {
			return limit
		}
		// step down from here (from the calls in flight, if a queue
		// inside the partner started the learning at a limit that did not
		// bind)
		from := limit
		if !es.binding {
			from = math.Min(limit, math.Max(c.lowest(), math.Ceil(es.inUse)))
		}
		return c.stepDown(from, es)
	}
	if limit >= c.ref.limit {
		// the controller has not let the limit down yet (Config.
		// MaxCutPerSecond)
		return c.probe(c.ref.limit)
	}
	// A sequential test of the throughput against the epoch above: it
	// fell, or held (both limits above C), or more calls are needed.
	ref := *c.ref
	r := es.x / ref.x
	se := c.cv(es) * math.Sqrt(1/es.n+1/ref.n)
	mid := (1 + limit/ref.limit) / 2 // between no fall and a fall in proportion
	fell := r < 0.9 && r < 1-z*se
	if !fell {
		if r-z*se <= mid && es.n < 8*c.minCalls() {
			return limit
		}
		if r >= mid {
			// the throughput held: both limits are above C
			return c.stepDown(limit, es)
		}
	}
	// This epoch served fewer calls than the partner could: none queued.
	c.setS0(es, true)
	c.clean = math.Floor(limit)
	c.ref = nil
	if ref.mean-c.s0 > z*math.Hypot(c.seMean(ref), math.Sqrt(c.v/c.s0N)) {
		// the epoch above queued: its balance gives C
		if b := c.balance(ref); !math.IsInf(b.pt, 1) && b.pt > 0 {
			c.setC(b.pt, sq((b.hi-b.lo)/(2*c.z())), ref.limit)
			c.startRun(limit)
			if !c.precise() {
				return c.startRefine(b.pt)
			}
			return c.target()
		}
	} else {
		// the epoch above did not queue either: more calls for the
		// no-load RTT, and C is above both
		c.foldS0(ref)
		c.clean = math.Floor(ref.limit)
	}
	return c.startRun(ref.limit)
}

// stepDown continues learning below limit, from epoch es.
func (c *Capacity) stepDown(limit float64, es epochStats) float64 {
	if limit <= c.lowest() {
		// Cannot step down: take what there is. One call in flight does
		// not queue; at a higher Config.Min the limit cannot go lower
		// anyway.
		c.setS0(es, true)
		c.clean = math.Floor(limit)
		return c.startRun(limit)
	}
	c.ref = &es
	c.ep = capEpoch{limit: limit}
	return c.probe(limit)
}

// startLearning starts learning the no-load RTT at limit, asking for next;
// chase says that a queue, not a binding limit, started it.
func (c *Capacity) startLearning(limit, next float64, chase bool) float64 {
	c.learning, c.ref, c.refine, c.chase = true, nil, false, chase
	c.cutFrom, c.cutPending = nil, false
	c.ep = capEpoch{limit: limit}
	return next
}

// startRun ends learning at limit.
func (c *Capacity) startRun(limit float64) float64 {
	c.learning, c.ref, c.chase = false, nil, false
	c.ep = capEpoch{limit: limit}
	return limit
}

// lowest is the lowest limit a step down goes to.
func (c *Capacity) lowest() float64 { return math.Max(1, c.floor) }

// probe is the limit to step down to from limit: a quarter, or half below
// 16 permits (fewer take long to show a throughput), and at least one
// permit less.
func (c *Capacity) probe(limit float64) float64 {
	p := math.Floor(limit / 4)
	if limit < 16 {
		p = math.Floor(limit / 2)
	}
	return math.Max(c.lowest(), math.Min(p, math.Floor(limit)-1))
}

// cv is the coefficient of variation of one call's RTT to assume: the
// measured one once known, the epoch's own for typed calls, else 1.
func (c *Capacity) cv(es epochStats) float64 {
	if c.vW > 2 && c.s0 > 0 {
		return math.Sqrt(c.v) / c.s0
	}
	if es.dev > 0 {
		return math.Max(es.dev/es.mean, 0.05)
	}
	return 1
}

// seMean is the standard error of an epoch's mean RTT.
func (c *Capacity) seMean(es epochStats) float64 {
	return c.cv(es) * es.mean / math.Sqrt(math.Max(es.n, 1))
}

// setS0 takes es's mean RTT as the no-load RTT; the capacity estimate,
// made with the old one, is dropped.
func (c *Capacity) setS0(es epochStats, verified bool) {
	c.s0, c.s0N, c.verified, c.clean = es.mean, es.n, verified, 0
	if c.vW == 0 {
		// no spread measured yet: assume one as wide as the mean (CV 1),
		// with little weight
		c.v, c.vW = es.mean*es.mean, 2
	}
	c.poolSpread(es)
	c.known = false
}

// foldS0 adds the calls of an epoch known not to queue to the no-load RTT.
func (c *Capacity) foldS0(es epochStats) {
	w := c.s0N + es.n
	c.s0 = (c.s0*c.s0N + es.mean*es.n) / w
	c.s0N = math.Min(w, 5000)
	c.poolSpread(es)
}

// poolSpread adds the spread of one call's RTT that an epoch known not to
// queue showed: its RTTDev when known (typed calls), else the spread of
// its window means (Var m = v/N for a window of N calls).
func (c *Capacity) poolSpread(es epochStats) {
	switch {
	case es.dev > 0:
		c.poolVar(es.dev*es.dev, es.n-1)
	case es.k >= 3:
		v := (es.nmm - es.n*es.mean*es.mean) / float64(es.k-1)
		c.poolVar(math.Max(v, 0), float64(es.k-1))
	}
}

// poolVar adds a variance estimate with dof degrees of freedom.
func (c *Capacity) poolVar(v, dof float64) {
	if dof <= 0 {
		return
	}
	c.v = (c.v*c.vW + v*dof) / (c.vW + dof)
	c.vW = math.Min(c.vW+dof, 50)
}

// run keeps the limit at (1 + Headroom) × C once the no-load RTT is known.
func (c *Capacity) run(limit float64) float64 {
	e := &c.ep
	if e.n < c.minCalls() || e.dur < 2*c.s0 {
		return limit
	}
	es := e.stats()
	b := c.balance(es)
	if es.n*c.s0-b.sdAbs*c.z() > es.inUse*e.dur {
		// The calls were served in less time than they spent in flight:
		// the no-load RTT is too long (the partner got faster). With no
		// queue possible, their mean RTT is the no-load RTT; the estimate
		// of C, proportional to it, goes with it.
		old := c.s0
		c.s0, c.s0N = es.mean, es.n
		if c.known {
			c.c *= c.s0 / old
		}
		c.restartRun()
		return limit
	}
	queued := !math.IsInf(b.hiAbs, 1) // calls queued, whatever the error of the no-load RTT
	if !c.verified && (es.binding || queued) {
		// An unverified no-load RTT, and a limit that binds or a queue:
		// learn it before acting on it.
		return c.startLearning(limit, limit, !es.binding)
	}
	if undo, ok := c.floorRule(limit, es); ok {
		if queued {
			// a queue still shows where the partner is not saturated:
			// the no-load RTT is stale (its base latency rose); learn it
			// again, stepping down from the limit before the cuts
			c.verified, c.known = false, false
			return c.startLearning(limit, undo, false)
		}
		// no queue now: the estimate was too low
		c.known = false
		c.restartRun()
		return undo
	}
	if DebugHook != nil {
		DebugHook(fmt.Sprintf("run: L %.1f n %.0f dur %.2fs pt %.2f lo %.2f loRTT %.2f hi %.2f hiAbs %.2f C %.2f known %v binding %v mean %.2f s0 %.2f", limit, es.n, es.dur/1e9, b.pt, b.lo, b.loRTT, b.hi, b.hiAbs, c.c, c.known, es.binding, es.mean/1e6, c.s0/1e6))
	}
	if c.known && c.c >= math.Max(b.lo, b.loRTT) && c.c <= b.hi {
		// consistent with the estimate (a load near C keeps the queue
		// small)
		if c.full() {
			// a full pool agrees with the estimate: the cuts before it,
			// if any, are over
			c.cutFrom, c.cutPending = nil, false
		}
		switch {
		case !math.IsInf(b.hi, 1) && c.full():
			// refine the estimate, and start over so that it follows C
			c.fold(b.pt, b.lo, b.hi)
			c.restartRun()
		case c.full() && math.IsInf(b.hi, 1) && es.pinned() >= 0.5:
			// No queue showed over a full pool at a limit that held the
			// calls back most of the time. With C at the estimate, the
			// headroom makes a queue; if the partner is too noisy to show
			// it (or the limit too close to the estimate to make one),
			// the estimate is not evidence of C: probe a step higher,
			// where a C that did not grow shows a larger queue.
			c.known = false
			c.restartRun()
			return math.Max(math.Floor(limit)+1, math.Floor(limit*(1+c.headroom())))
		case c.full() && c.ep.dur >= 8*40*c.s0:
			// no queue for long: start over
			c.restartRun()
		}
		return c.target()
	}
	switch {
	case queued || c.known && !math.IsInf(b.hi, 1):
		// C is determined, and not the estimate
		c.setC(b.pt, sq((b.hi-b.lo)/(2*c.z())), limit)
		c.grows = 0
		c.restartRun()
		if !c.precise() {
			return c.startRefine(b.pt)
		}
		return c.target()
	case es.binding:
		// No queue at a limit the demand reached: C is above the estimate,
		// or none is known. Grow from what the evidence shows served
		// without a queue (lo): by the headroom, and by steps that double
		// after two in a row (double until C is first seen).
		var next float64
		if !c.seen {
			next = 2 * math.Floor(limit) // no C seen yet: double
		} else {
			// a headroom at least, more where the evidence shows more
			step := math.Min(0.5, c.headroom()*math.Pow(2, float64(max(c.grows-1, 0))))
			next = math.Floor(b.loRTT * (1 + step))
			if (1+c.headroom())*b.loRTT >= math.Floor(limit) {
				// C is at least what this limit assumes: one permit more
				// at least (a headroom can round to less than one)
				next = math.Max(next, math.Floor(limit)+1)
			}
			if next <= math.Floor(limit) {
				// not enough evidence yet
				if c.full() && c.ep.dur >= 8*40*c.s0 {
					c.restartRun()
				}
				return limit
			}
		}
		c.known = false
		c.cutFrom, c.cutPending = nil, false
		c.clean = math.Max(c.clean, math.Floor(b.loRTT))
		c.grows++
		// the pool goes on: the evidence that the lower limits did not
		// queue still holds (the balance does not care which limit was in
		// force), and the next step needs less of its own
		if c.full() {
			c.foldClean(es)
			c.restartRun()
		}
		return next
	}
	// The limit does not bind and nothing queued: no evidence of C. Hold,
	// but not further than twice the most calls that were in flight, so
	// that a partner whose capacity falls is reached soon.
	next := limit
	if c.full() {
		c.foldClean(es)
		c.restartRun()
		next = math.Min(limit, math.Max(c.lowest(), 2*float64(es.maxLevel())))
	}
	if c.known {
		return math.Max(next, c.target())
	}
	return next
}

// pinned is the share of the epoch's time with the limit's worth of calls
// in flight (the limit held calls back).
func (es epochStats) pinned() float64 {
	l := int(math.Floor(es.limit))
	total, at := 0.0, 0.0
	for k, t := range es.prof {
		total += t
		if k >= l {
			at += t
		}
	}
	if total == 0 {
		return 0
	}
	return at / total
}

// maxLevel is the most calls that were in flight during the epoch.
func (es epochStats) maxLevel() int {
	for k := len(es.prof) - 1; k > 0; k-- {
		if es.prof[k] > 0 {
			return k
		}
	}
	return 0
}

// foldClean folds a run epoch into the no-load RTT if it cannot have
// queued by more than 0.5 % of it: the time its calls could have queued in
// a partner of the capacity known to hold (clean) is that small.
func (c *Capacity) foldClean(es epochStats) {
	if c.clean < 1 || es.n < c.minCalls() {
		return
	}
	q := 0.0
	for k, t := range es.prof {
		if float64(k) > c.clean {
			q += t * (float64(k) - c.clean)
		}
	}
	if q/es.n <= 0.005*c.s0 {
		c.foldS0(es)
	}
}

// full reports whether a run epoch has pooled enough to start over:
// 10 × MinCalls calls and 40 no-load RTTs.
func (c *Capacity) full() bool {
	return c.ep.n >= 10*c.minCalls() && c.ep.dur >= 40*c.s0
}

// precise reports whether the no-load RTT is known to within 3 %.
func (c *Capacity) precise() bool {
	return c.s0N >= 2000 || math.Sqrt(c.v/c.s0N) <= 0.03*c.s0
}

// startRefine runs an epoch at 80 % of capacity to refine the no-load RTT.
func (c *Capacity) startRefine(capacity float64) float64 {
	c.refine = true
	c.refineLimit = math.Max(c.lowest(), math.Floor(0.8*capacity))
	c.ep = capEpoch{limit: c.refineLimit, skip: c.ep.limit}
	return c.refineLimit
}

// refining folds the epoch at 80 % of C into the no-load RTT, if it did
// not queue.
func (c *Capacity) refining(limit float64) float64 {
	if limit > c.refineLimit {
		// the controller has not let the limit down yet
		c.ep = capEpoch{limit: limit}
		return c.refineLimit
	}
	es := c.ep.stats()
	// until the no-load RTT with this epoch is known to within 3 %, for
	// at most 25 × MinCalls calls
	se := math.Sqrt(c.v/(c.s0N+es.n)) / c.s0
	if es.n < math.Max(4*c.minCalls(), 2*limit) || c.ep.dur < 10*c.s0 || se > 0.03 && es.n < 25*c.minCalls() {
		return limit
	}
	c.refine = false
	if !math.IsInf(c.balance(es).hiAbs, 1) {
		// it queued: C is below 80 % of the estimate (or the no-load RTT
		// is stale; run's floor rule checks)
		c.ep.limit = limit
		return c.run(limit)
	}
	// It did not queue: fold it in. The estimate of C, made with the old
	// no-load RTT, scales with it (the balance makes C proportional to
	// it) but is only a starting point: it is measured again from the
	// limit it gives.
	old := c.s0
	c.foldS0(es)
	c.clean = math.Max(c.clean, math.Floor(limit))
	c.restartRun()
	if !c.known || old <= 0 {
		return limit
	}
	c.c *= c.s0 / old
	next := c.target()
	c.known = false
	return next
}

// floorRule checks the cuts since cutFrom once they took 20 % off the
// limit, at a limit that binds: a cut of a real queue keeps the
// throughput, while at a limit below C the throughput falls in proportion
// to the calls in flight. If it fell by more than half that, it returns
// the limit to go back to, and true.
func (c *Capacity) floorRule(limit float64, es epochStats) (float64, bool) {
	if !es.binding {
		return 0, false
	}
	if c.cutPending && c.cutFrom == nil {
		// the first epoch after the first cut: not the one before it,
		// which may have straddled a change of C
		c.cutFrom, c.cutPending = &es, false
		return 0, false
	}
	from := c.cutFrom
	if from == nil || limit > 0.8*from.limit || from.inUse <= 0 || from.x <= 0 {
		return 0, false
	}
	c.cutFrom, c.cutPending = nil, false
	ratio := es.inUse / from.inUse
	if es.x >= from.x*(1-(1-ratio)/2) {
		return 0, false
	}
	return math.Max(from.limit, c.cutBefore), true
}

// target is the limit for the current estimate: (1 + Headroom) × C
// rounded to whole permits (the controller applies whole permits), and at
// least one permit above C, so that a C that grew shows.
func (c *Capacity) target() float64 {
	return math.Max(math.Floor((1+c.headroom())*c.c+0.5), math.Floor(c.c)+1)
}

// DebugState is temporary.
func (c *Capacity) DebugState() (cv, capacity float64, known, learning bool) {
	cv = math.NaN()
	if c.s0 > 0 {
		cv = math.Sqrt(c.v) / c.s0
	}
	return cv, c.c, c.known, c.learning
}

// setC takes a new estimate of C, which epoch es at limit showed; the
// level known not to queue stays below it, and a cut it makes starts the
// floor rule's watch.
func (c *Capacity) setC(pt, v, limit float64) {
	c.c, c.cVar, c.known, c.seen = pt, v, true, true
	c.clean = math.Min(c.clean, math.Floor(0.9*pt))
	if c.target() < math.Floor(limit) && c.cutFrom == nil && !c.cutPending {
		c.cutPending, c.cutBefore = true, limit
	}
}

// fold refines the estimate with a consistent one.
func (c *Capacity) fold(pt, lo, hi float64) {
	v := sq((hi - lo) / (2 * c.z()))
	pv := c.cVar + sq(0.02*c.c) // the capacity may drift
	if v <= 0 || pv <= 0 {
		return
	}
	c.c = (c.c/pv + pt/v) / (1/pv + 1/v)
	c.cVar = 1 / (1/pv + 1/v)
}

// restartRun starts a new run epoch at the same limit.
func (c *Capacity) restartRun() {
	c.ep = capEpoch{limit: c.ep.limit}
}

// balanced is what an epoch's balance gives: the capacity pt, its bounds
// lo and hi at Evidence standard errors of the balance (hi +Inf when no
// queue shows), to compare with an estimate made with the same no-load
// RTT, and hiAbs, the upper bound counting the error of the no-load RTT
// too, which says whether calls queued at all.
type balanced struct {
	pt, lo, hi, hiAbs, loRTT float64
	sdAbs                    float64
}

// balance solves the epoch's balance.
//
// The error of the balance has two parts: the service times of the calls
// counted (N·v), and the edges: the calls in service when the epoch began
// had part of their service before it, and those in service when it ended
// part of theirs in it, uncounted. Each such call contributes its age in
// service, whose mean square is E[S³]/(3·E[S]) for service times S; with a
// log-normal's third moment that is s0²·(1 + cv²)³/3.
func (c *Capacity) balance(es epochStats) balanced {
	cv2 := c.v / (c.s0 * c.s0)
	age2 := c.s0 * c.s0 * math.Pow(1+cv2, 3) / 3
	v := es.n*c.v + 2*es.inUse*age2
	sd := math.Sqrt(v)
	sdAbs := math.Sqrt(v + es.n*es.n*c.v/math.Max(c.s0N, 1))
	work := es.n * c.s0
	z := c.z()
	// The lower bound that growth acts on counts the waiting from the
	// RTTs themselves (their sum less the service): no edges, since each
	// call's RTT is whole, so a limit that no call queued at proves
	// itself sooner.
	inFlight := es.inUse * es.dur
	waited := math.Max(0, es.sum-work)
	return balanced{
		pt:    invertBusy(es.prof, work),
		lo:    invertBusy(es.prof, work-z*sd),
		hi:    invertBusy(es.prof, work+z*sd),
		hiAbs: invertBusy(es.prof, work+z*sdAbs),
		loRTT: invertBusy(es.prof, inFlight-waited-z*math.Sqrt(es.n*c.v)),
		sdAbs: sdAbs,
	}
}

// invertBusy returns the capacity c at which ∫min(n, c)dt over the profile
// equals work (ns): +Inf if work is at least ∫n dt (no queue needed), 0 if
// it is not positive.
func invertBusy(prof []float64, work float64) float64 {
	if work <= 0 {
		return 0
	}
	// B(c) rises with slope Σ_{k>c} prof[k] from B(0) = 0; walk up the
	// integers.
	above := 0.0
	for _, t := range prof {
		above += t
	}
	b := 0.0
	for j := 0; j < len(prof); j++ {
		above -= prof[j] // time with more than j calls in flight
		if above <= 0 {
			break
		}
		if b+above >= work {
			return float64(j) + (work-b)/above
		}
		b += above
	}
	return math.Inf(1)
}

func sq(x float64) float64 { return x * x }

// param returns v, or def when v is zero or outside (lo, hi] (NaN
// included).
func param(v, def, lo, hi float64) float64 {
	if v == 0 || !(v > lo && v <= hi) {
		return def
	}
	return v
}
