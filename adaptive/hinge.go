package adaptive

import (
	"math"
	"time"
)

// Hinge estimates the partner's capacity C from the RTT of each level of
// concurrency: a call granted as the k-th in flight waits behind k − C
// others when k > C, so its expected RTT is S · max(1, k/C), with S the
// no-load RTT: a flat line that bends up at C, a hinge. It measures S and
// C by fitting that hinge to the levels' mean RTTs and holds the limit at
// Target (1.1) × C. It is not the default; on the matrix of
// docs/benchmarks.md ("Adaptive limits") it meets every goal in more runs
// than Capacity and SetPoint and has the best worst-case goodput and p99
// of the three, at the price of probes that halve the limit now and then.
//
// It needs per-call samples of calls whose finish says which call it is:
// Window.PerCall, and calls made with Bulkhead.TryAcquire or Acquire and
// finished with Call.Finish, or made through the operators (which give
// each call's start back), or, watched, finished with their duration (a
// Lease, FinishCallStarted): the level of a call is its Sample.InFlight at
// its grant. Its clock is the running sum of the samples' Elapsed.
// Configure it as
//
//	adaptive.Config{Algorithm: func() adaptive.Algorithm { return &adaptive.Hinge{} },
//		Window: adaptive.Window{PerCall: true}, MaxCutPerSecond: 1}
//
// MaxCutPerSecond 1 lets a probe halve the limit and a cut reach Target ×
// C at once; under the default 0.5 a cut made less than a second before a
// probe holds the probe above half the limit, and a descent from far above
// C takes a second per halving. On the 20 seeds of the matrix the two meet
// every goal in about as many runs (384 with 1, 374 with 0.5), but the
// worst p99 is 1.86× the unloaded p99 with 1 and 3.96× with 0.5 (the
// slower descent from 5 × C), the worst goodput 0.77× and 0.57×: hence 1.
//
// Update returns whole permits, rounded: the controller applies the
// floor of the limit, which at small limits would hold it a permit below
// Target × C (on the matrix, before the rules for processor sharing
// below, rounding took the runs meeting every goal from 277 to 322 of
// 1,800).
//
// Every sample is put at its level (levels above 1000 count at 1000, so
// C is not estimated beyond it; the limit still grows): the levels keep
// decayed sums of the calls' RTTs (× 0.7 per epoch), and a call given up
// (Sample.Dropped: its RTT is cut short at the caller's deadline) counts
// as given up at its level; a level with more than 5 % of its calls given
// up is left out of the fits. An epoch ends at the first sample 250 ms or
// more after the previous one ended (decisions happen at samples, not on
// a timer), and its decision follows these rules:
//
//   - S: the levels' mean RTTs are fitted with S and C together (least
//     squares weighted by the calls, C on a grid of quarter permits), and
//     the fit's S is taken when it beats the best fit with no flat part
//     (every level queued, RTT in proportion to the level) by 9 per-call
//     variances and its flat part reaches down to 0.6 × the knee. Calls all
//     at one level (a reached limit above C) or all queued (a start far
//     above C) prove nothing, so S is never taken from them. Outside
//     probes, S is not raised above 1.15 × the S the last probe measured
//     (before the first probe it may rise freely): on a partner that shares
//     its capacity among the calls in, the levels' flat part is S × the
//     calls in / C, not S, and would carry S up with the shared RTT.
//   - Probe: when S is missing or older than 3 s and the limit was reached
//     in the epoch (a sample whose InFlight reached the limit in force), the
//     limit is held at half its value until 20 calls granted at that level
//     or below have finished and S is measured (at most 0.8 s, ended at a
//     sample: the floor goal allows 1 s); a probe whose
//     levels are all queued halves again. A probe that measures nothing
//     with S known, once 20 of its own calls (granted at its level or
//     below) have answered, lowers S to their mean RTT + 2 standard errors
//     when that is below S: every call takes S at least, on any partner,
//     so S is below that but for noise. It takes its calls' mean RTT as an
//     upper bound of S while none exists,
//     and as S when the controller's floor (Config.Min) held it above half
//     the limit (it cannot go lower, so an older S cannot be checked, and
//     read against a latency that rose, it showed a queue no cut could
//     shorten), and the next probe may come 1 s later.
//   - C: with S, C is fitted on the levels up to the limit in force (those
//     above it are from before a cut); a rise that does not beat a flat
//     line at S by 12 per-call variances is no queue. With 30 calls above
//     the fitted C, the estimate moves half way there (at once for a change
//     beyond 25 %, forgetting the levels' sums, which are from before the
//     change) and the limit is Target × it.
//   - With no queue in sight, a reached limit grows by 50 % (at least one
//     permit) once the top level has 5 calls, and a limit not reached
//     leaves room for twice the epoch's top level. The first growth after
//     a limit set from a fitted C is by 15 % (at least one permit): a step
//     past Target × C, not a leap that the next fit cuts back.
//   - Five calls given up in an epoch (granted since the last such cut)
//     cut the limit to Target × the fitted C, or by 30 % at least.
//   - Floor: a limit in force at the controller's floor (max(1,
//     Config.Min)) for 0.7 s, with no call given up since it got there,
//     leaves it: a probe there ends, the limit asked for is at least the
//     floor + 1, and the next decision is an epoch later. No cut shortens
//     a queue at the floor, so one that shows there comes from a wrong S
//     (the floor goal allows 1 s there; the rule acts at a sample, so
//     0.7 s leaves room for the next one).
//
// With windowed samples (PerCall off) a window counts as N calls at its
// InFlight level (its calls given up as Drops calls there): it runs, but
// the levels it sees are the windows' peaks, so the fits are rough. A
// call whose finish says when it started (the operators over a Bulkhead
// made by New; watched, a Lease or FinishCallStarted) finds its own grant
// and does exactly as typed calls on the 20 seeds of the matrix (every
// goal in 384 runs, worst goodput 0.77×, worst p99 1.86×), but one given
// back with a bare FinishCall is matched with the oldest grant and meets
// every goal in 274 runs, with a worst goodput of 0.33×: on the two-kind
// (bimodal) partner the matched RTTs rise with the level where no queue
// is, S is taken at about half the true one and the fits cut C to 1 or 2.
// Without the floor rule it stayed there up to 2 s (at half load; the
// floor goal allows 1 s); with it, 0.9 s at most. Probes stay at or above
// the controller's floor (Config.Min).
//
// It reads the capacity from calls queued in order inside the partner (the
// matrix's M/G/c partners), whose RTT grows with their level. On a partner
// whose calls all slow down together when it is overloaded (processor
// sharing: every call in at once, sharing the CPUs), the levels' RTTs stay
// flat, at S × the calls in / C, and it sees no queue. The rules above
// for S (the cap outside probes, a probe's bound) keep S from creeping up
// with that shared RTT, and the first growth after a fit is 15 %: on such
// a partner with Poisson arrivals it holds 1.25 to 1.4 × C while C steps
// 20 → 7 → 20 and after a start at 5 and 12.5 × C, where it held up to
// 2.9 × C and 4 and 8 × C without those rules
// (TestHingeFollowsAProcessorSharingPartner,
// TestHingeComesDownToAProcessorSharingPartnersCapacity). On ExampleNew's
// partner, where every call of a window starts and ends together, it
// holds 59 permits while C drops from 40 to 8, where Capacity goes from
// 40 to 8. On the matrix's cells with such a partner (the dev harness,
// TestDev -dev.ps) it meets every goal in 198 runs (384 on the queue) and
// its p99 goal in 926 (1,790), worst goodput 0.71×, where Capacity meets
// every goal in 200 (199; docs/benchmarks.md). That is why it is not the
// default.
//
// A decision costs time in proportion to the levels seen plus the grid
// (the fits sum the levels on each side of a knee as the grid passes
// them): about 55 µs with 1000 levels filled, 1.5 µs with 20; a sample
// that decides nothing about 50 to 90 ns (BenchmarkHingeUpdate). The
// state is at most 1001 levels. The zero Hinge is ready to use; like
// every Algorithm, a Hinge serves one bulkhead.
type Hinge struct {
	// Target is the limit as a multiple of the estimated capacity. Zero
	// means 1.1; values not above 1 are replaced by 1.1.
	Target float64

	now  float64 // ns: the sum of the samples' Elapsed
	want float64 // the limit asked for; 0 before the first sample
	s    float64 // the no-load RTT (ns); 0: not measured yet
	// sRef is the S a probe last gave (0: none yet): outside probes S
	// rises to at most hingeCreep × it
	sRef  float64
	sAt   float64 // when s was last measured
	est   float64 // the estimated C; 0: none yet
	t0    float64 // the start of the epoch
	fresh float64 // calls granted since cutAt given up in this epoch
	cutAt float64 // the last cut on calls given up
	// reached: a sample of this epoch reached the limit in force
	reached bool
	// gentle: the limit was last set from a fitted C, so its next growth
	// is by hingeGentle
	gentle bool

	probing   bool
	probeAt   float64
	probeLvl  int
	probeHeld bool // the controller's floor holds the probe above its level
	probeN    int  // calls granted since probeAt at probeLvl or below, finished
	probeNext int  // probeN at which the probe next tries to measure S
	resume    float64
	// the answered calls granted since probeAt at probeLvl or below:
	// count, Σ RTT, Σ RTT² (ns, ns²)
	inN, inSum, inSq float64

	floor float64 // the controller's Min (setFloor); 0: 1
	// floorAt is when the limit in force went to the floor, max(1,
	// floor) (-1: it is above it); dropAt the last call given up
	floorAt, dropAt float64

	lv []hingeLevel // by level; lv[0] unused
	ks []int        // scratch: the levels of a fit
}

// hingeLevel is what the calls of one level did, decayed per epoch.
type hingeLevel struct {
	n, sum, sq float64 // answered calls, Σ RTT (ns), Σ RTT² (ns²)
	to         float64 // calls given up
}

// Rules of Hinge (see its doc comment); the numbers were tuned on seeds 1
// to 5 of the matrix of bench/adaptivesim.
const (
	hingeMaxLevel = 1000 // the highest level kept; the ceiling's default
	hingeTarget   = 1.1  // default Target
	hingeEpoch    = float64(250 * time.Millisecond)
	hingeDecay    = 0.7
	hingeCensor   = 0.05 // share of a level's calls given up that leaves it out
	hingeGain     = 9    // per-call variances by which the joint fit must win
	hingeLow      = 0.6  // the flat part reaches down to this × the knee
	hingeRiseGain = 12   // per-call variances by which a rise must beat flat
	hingeStale    = float64(3 * time.Second)
	hingeProbe    = 0.5                             // a probe's limit, × the limit
	hingeProbeN   = 20                              // calls a probe waits for
	hingeProbeMax = float64(800 * time.Millisecond) // ended at a sample: rarely past 1 s
	hingeFloorMax = float64(700 * time.Millisecond) // at the floor; ended at a sample
	hingeGrow     = 1.5
	hingeGentle   = 1.15 // the first growth after a limit set from a fitted C
	hingeCreep    = 1.15 // outside probes S rises to at most this × a probe's
	hingeBoundSE  = 2    // standard errors above a probe's mean RTT: S's bound
	hingeGrowN    = 5
	hingeAbove    = 30 // calls above the fitted C an estimate needs
	hingeJump     = 0.25
	hingeRoom     = 2
	hingeCensored = 5 // calls given up in an epoch that cut the limit
	hingeCut      = 0.7
	// hingeMinDev is the smallest per-call standard deviation of the fits,
	// as a share of the mean RTT: a partner that answers without noise
	// (or a clock too coarse to see it) still fits.
	hingeMinDev = 1e-3
)

// Update implements Algorithm.
func (h *Hinge) Update(limit float64, s Sample) float64 {
	if !(limit >= 1) { // NaN too
		limit = 1
	}
	limit = math.Min(limit, math.MaxInt32)
	if h.want == 0 {
		h.want, h.cutAt, h.floorAt, h.dropAt = limit, math.Inf(-1), -1, math.Inf(-1)
	}
	prev := h.now
	if e := float64(s.Elapsed); e > 0 {
		h.now += e
	}
	h.record(limit, s)
	if s.Dropped || s.Drops > 0 {
		h.dropAt = h.now
	}
	if lo := math.Max(1, h.floor); limit > lo {
		h.floorAt = -1
	} else if h.floorAt < 0 {
		h.floorAt = prev // it went there after the previous sample
	} else if h.now-h.floorAt >= hingeFloorMax && h.dropAt < h.floorAt {
		// no cut shortens a queue at the floor: a healthy partner is
		// not held there (a probe there ends); the next decision is an
		// epoch later, above the floor
		if h.probing {
			h.endProbe()
		}
		h.want = math.Max(h.want, lo+1)
		h.floorAt, h.t0, h.reached = h.now, h.now, false
	}
	if h.probing {
		if h.now-h.probeAt >= hingeProbeMax {
			h.endProbe()
		} else if h.probeN >= h.probeNext {
			h.probeNext = h.probeN + 5
			if h.measure(h.levels(), true) {
				h.endProbe()
			}
		}
	} else if h.now-h.t0 >= hingeEpoch {
		h.decide(limit)
	}
	// whole permits, rounded (the controller applies the floor)
	return math.Max(1, math.Round(h.want))
}

// NoLoadRTT returns the current estimate of the partner's RTT without
// queueing, in nanoseconds (0 before it is measured).
func (h *Hinge) NoLoadRTT() float64 { return h.s }

// EstimatedCapacity returns the current estimate of the partner's
// capacity C (0 before the first).
func (h *Hinge) EstimatedCapacity() float64 { return h.est }

// setFloor keeps the probes at or above the controller's Config.Min.
func (h *Hinge) setFloor(minLimit int) { h.floor = math.Min(float64(minLimit), math.MaxInt32) }

func (h *Hinge) target() float64 { return param(h.Target, hingeTarget, 1, math.Inf(1)) }

// record puts the sample's calls at their level.
func (h *Hinge) record(limit float64, s Sample) {
	level := min(max(s.InFlight, 1), hingeMaxLevel)
	if float64(level) >= math.Floor(limit) {
		h.reached = true
	}
	if level >= len(h.lv) {
		h.lv = append(h.lv, make([]hingeLevel, level+1-len(h.lv))...)
	}
	l := &h.lv[level]
	n := max(s.N, 1)
	drops := min(max(s.Drops, 0), n)
	if s.Dropped && drops == 0 {
		drops = 1
	}
	rtt := rttNanos(s)
	sent := h.now - rtt
	if drops > 0 {
		l.to += float64(drops)
		if sent >= h.cutAt {
			h.fresh += float64(drops)
		}
	}
	answered := float64(n - drops)
	if answered == 0 {
		return
	}
	dev := float64(s.RTTDev)
	l.n += answered
	l.sum += answered * rtt
	l.sq += answered*rtt*rtt + max(answered-1, 0)*dev*dev
	if h.probing && sent >= h.probeAt && level <= h.probeLvl {
		h.probeN += n - drops
		h.inN += answered
		h.inSum += answered * rtt
		h.inSq += answered*rtt*rtt + max(answered-1, 0)*dev*dev
	}
}

// levels returns the levels with at least one (decayed) call answered and
// at most hingeCensor of their calls given up, ascending, in h.ks.
func (h *Hinge) levels() []int {
	ks := h.ks[:0]
	for k := 1; k < len(h.lv); k++ {
		l := &h.lv[k]
		if l.to > hingeCensor*(l.n+l.to) {
			continue
		}
		if l.n >= 1 {
			ks = append(ks, k)
		}
	}
	h.ks = ks
	return ks
}

// moments are the sums both fits need over a set of levels.
type moments struct {
	q     float64 // Σ n·m² (m a level's mean RTT)
	w     float64 // Σ of the squared deviations within the levels
	calls float64
	sum   float64 // Σ RTT
	sumK  float64 // Σ RTT·k
	nK2   float64 // Σ n·k²
}

func (h *Hinge) moments(ks []int) moments {
	var m moments
	for _, k := range ks {
		l := &h.lv[k]
		mean := l.sum / l.n
		fk := float64(k)
		m.q += l.sum * mean
		m.w += math.Max(0, l.sq-l.sum*mean)
		m.calls += l.n
		m.sum += l.sum
		m.sumK += l.sum * fk
		m.nK2 += l.n * fk * fk
	}
	return m
}

// variance is the per-call variance of a fit whose squared error is sse
// with dof degrees of freedom taken, at least (hingeMinDev × the mean)².
func (m moments) variance(sse, dof float64) float64 {
	mean := m.sum / m.calls
	return math.Max((m.w+sse)/(m.calls-dof), hingeMinDev*hingeMinDev*mean*mean)
}

// knees runs f over the knees x of the grid from lo to hi in quarter
// permits, with a and b the sums a fit with its knee at x needs: Σ n·g²
// and Σ RTT·g over the levels ks, g = max(1, k/x). The levels at or below
// x are summed as they pass (a moving split), so the grid costs O(1) per
// knee and the whole O(levels + grid).
func (h *Hinge) knees(ks []int, m moments, lo, hi float64, f func(x, a, b float64)) {
	var nLo, sumLo float64
	nK2Hi, sumKHi := m.nK2, m.sumK
	j := 0
	for x := lo; x <= hi+0.01; x += 0.25 {
		for j < len(ks) && float64(ks[j]) <= x {
			l := &h.lv[ks[j]]
			fk := float64(ks[j])
			nLo += l.n
			sumLo += l.sum
			nK2Hi -= l.n * fk * fk
			sumKHi -= l.sum * fk
			j++
		}
		if j == len(ks) {
			nK2Hi, sumKHi = 0, 0
		}
		f(x, nLo+nK2Hi/(x*x), sumLo+sumKHi/x)
	}
}

// jointFit fits S and C to the levels' mean RTTs and returns S, C and the
// gain: how much less the fit's squared error is than that of the best
// fit with no flat part, in per-call variances (see Hinge).
func (h *Hinge) jointFit(ks []int) (s, c, gain float64) {
	if len(ks) < 2 {
		return 0, 0, 0
	}
	m := h.moments(ks)
	if m.calls < 4 {
		return 0, 0, 0
	}
	sseProp := m.q - m.sumK*m.sumK/m.nK2
	best := math.Inf(1)
	h.knees(ks, m, float64(ks[0]), float64(ks[len(ks)-1]), func(x, a, b float64) {
		if sse := m.q - b*b/a; sse < best {
			best, s, c = sse, b/a, x
		}
	})
	best = math.Max(best, 0)
	v := m.variance(best, 2)
	var low float64
	for _, k := range ks {
		if float64(k) <= hingeLow*c {
			low += h.lv[k].n
		}
	}
	if low < 3 {
		return s, c, 0
	}
	return s, c, (sseProp - best) / v
}

// fit returns the C that fits the levels' mean RTTs best with S = h.s, the
// calls at levels above it and the highest level. A rise that does not fit
// better than a flat line at S by hingeRiseGain per-call variances is no
// queue: fit then returns the top level as C and no calls above it.
func (h *Hinge) fit(ks []int) (c, above float64, top int) {
	if len(ks) == 0 {
		return 0, 0, 0
	}
	top = ks[len(ks)-1]
	m := h.moments(ks)
	s := h.s
	flat := math.Max(0, m.q-2*s*m.sum+s*s*m.calls)
	best := math.Inf(1)
	h.knees(ks, m, 1, float64(top), func(x, a, b float64) {
		if sse := m.q - 2*s*b + s*s*a; sse < best {
			best, c = sse, x
		}
	})
	best = math.Max(best, 0)
	if m.calls > 2 && (flat-best)/m.variance(best, 1) < hingeRiseGain {
		return float64(top), 0, top
	}
	for _, k := range ks {
		if float64(k) > c {
			above += h.lv[k].n
		}
	}
	return c, above, top
}

// measure takes S from the levels if they show it. Outside a probe
// (probe false) an S above hingeCreep × the last probe's is not taken: on
// a partner that shares its capacity among the calls in, the levels' flat
// part is S × the calls in / C, not S.
func (h *Hinge) measure(ks []int, probe bool) bool {
	s, _, gain := h.jointFit(ks)
	if gain < hingeGain || s <= 0 {
		return false
	}
	if probe {
		h.sRef = s
	} else if h.sRef > 0 && s > hingeCreep*h.sRef {
		return false
	}
	h.s, h.sAt = s, h.now
	return true
}

// decide ends an epoch at limit, the limit in force.
func (h *Hinge) decide(limit float64) {
	ks := h.levels()
	h.measure(ks, false)
	reached := h.reached
	target := h.target()
	// a limit held below the one asked for (the ceiling, Smoothing) grows
	// from the limit in force; one held above (MaxCutPerSecond) is still
	// cut to the one asked for
	h.want = math.Min(h.want, limit)
	switch {
	case h.fresh >= hingeCensored:
		// calls given up: a queue beyond the callers' deadline
		if h.s > 0 {
			if c, _, _ := h.fit(ks); c > 0 {
				h.est = c
			}
		}
		if h.est > 0 {
			h.want = math.Max(1, math.Min(h.want*hingeCut, target*h.est))
		} else {
			h.want = math.Max(1, h.want*hingeCut)
		}
		h.cutAt = h.now
	case h.s > 0:
		// the levels above the limit in force are from before a cut
		n := len(ks)
		for n > 0 && float64(ks[n-1]) > limit {
			n--
		}
		c, above, top := h.fit(ks[:n])
		switch {
		case above >= hingeAbove:
			if h.est == 0 || math.Abs(c-h.est) > hingeJump*h.est {
				if h.est > 0 {
					// the levels' RTTs are from before a change of C
					clear(h.lv)
				}
				h.est = c
			} else {
				h.est += 0.5 * (c - h.est)
			}
			h.want = math.Max(1, target*h.est)
			h.gentle = true
		case reached && above == 0 && top > 0 && h.lv[top].n >= hingeGrowN:
			grow := hingeGrow
			if h.gentle {
				// just set from a fitted C: a step, not a leap
				grow, h.gentle = hingeGentle, false
			}
			h.want = math.Max(h.want*grow, h.want+1)
		}
		if above == 0 && !reached && top > 0 {
			// no queue in sight, limit not reached: room for bursts
			h.want = math.Max(h.want, hingeRoom*float64(top))
		}
	}
	h.epoch()
	if reached && (h.s == 0 || h.now-h.sAt > hingeStale) {
		h.startProbe(h.want, h.want)
	}
}

// epoch decays the levels and starts a new epoch.
func (h *Hinge) epoch() {
	for k := range h.lv {
		l := &h.lv[k]
		l.n *= hingeDecay
		l.sum *= hingeDecay
		l.sq *= hingeDecay
		l.to *= hingeDecay
	}
	h.t0, h.reached, h.fresh = h.now, false, 0
}

// startProbe holds the limit at hingeProbe × base until hingeProbeN calls
// have finished at that level or below; the limit then goes back to
// resume.
func (h *Hinge) startProbe(resume, base float64) {
	h.probing, h.probeAt, h.probeN, h.probeNext, h.resume = true, h.now, 0, hingeProbeN, resume
	h.inN, h.inSum, h.inSq = 0, 0, 0
	// a probe below the controller's floor would be held at the floor and
	// count no call
	h.probeLvl = int(math.Max(math.Max(1, h.floor), math.Floor(hingeProbe*base)))
	h.probeHeld = math.Floor(hingeProbe*base) < h.floor
	h.want = float64(h.probeLvl)
}

func (h *Hinge) endProbe() {
	h.probing = false
	ks := h.levels()
	if !h.measure(ks, true) && float64(h.probeLvl) > math.Max(1, h.floor) && len(ks) >= 2 {
		// every level queued (the best knee at the lowest level, the
		// highest at least 1.5 × it): C is below the probe's level
		if _, c, _ := h.jointFit(ks); c <= float64(ks[0])+0.25 && ks[len(ks)-1] >= 3*ks[0]/2 {
			h.startProbe(h.resume, float64(h.probeLvl))
			return
		}
	}
	if h.s > 0 && h.sAt < h.probeAt && h.inN >= hingeProbeN {
		// not measured: the probe's own calls, which answered at its
		// level or below, bound S from above (their mean + hingeBoundSE
		// standard errors); an S above that bound is taken down to it
		m := h.inSum / h.inN
		bound := m + hingeBoundSE*math.Sqrt(math.Max(0, h.inSq/h.inN-m*m)/h.inN)
		if bound < h.s {
			h.s, h.sRef = bound, bound
		}
	}
	if h.s == 0 || h.sAt < h.probeAt {
		// not measured: the mean RTT at the probe's level or below, an
		// upper bound of S
		var sum, n float64
		for _, k := range ks {
			if k <= h.probeLvl {
				sum += h.lv[k].sum
				n += h.lv[k].n
			}
		}
		// a probe the floor held above its level cannot go lower to check
		// S: the RTT there is the lowest the bulkhead can see, so it
		// replaces S
		// (kept, an S from before a rise of the partner's latency read as
		// a queue that no cut could shorten: the limit stayed at the
		// floor, FuzzAlgorithms corpus entry hinge_floor_keeps_an_old_s)
		if (h.s == 0 || h.probeHeld) && n > 0 {
			h.s = sum / n
		}
		h.sAt = h.now - hingeStale + float64(time.Second)
	}
	h.want = h.resume
	h.t0, h.reached = h.now, false
}
