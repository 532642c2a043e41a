package adaptivesim

import (
	"math"
	"time"
)

// blindParams are blindHinge's tunables (blindDefaults: tuned on seeds 1
// to 5 only).
type blindParams struct {
	Gain     float64       // how much better than "every level queued" the joint fit must be, in per-call variances, to measure S
	Stale    time.Duration // S older than this is measured again (a probe) when the limit is reached
	Probe    float64       // a probe's limit, as a share of the limit
	ProbeN   int           // calls a probe waits for (ended at its level or below) before it tries to measure S
	Grow     float64       // growth of a reached limit while no queue is in sight
	GrowN    float64       // calls at the top level a growth needs
	Above    float64       // calls above the fitted C an estimate needs
	Target   float64       // the limit, as a multiple of the estimated C
	Decay    float64       // per epoch, of the levels' sums
	RiseGain float64       // how much better than flat at S a rise must fit, in per-call variances, to count as a queue
	Room     float64       // an epoch with no queue in sight and the limit not reached leaves room for Room × its top level
	Censored float64       // calls given up in an epoch (sent since the last such cut) that cut the limit
}

var blindDefaults = blindParams{Gain: 9, Stale: 3 * time.Second, Probe: 0.5, ProbeN: 20, Grow: 1.5, GrowN: 5,
	Above: 30, Target: OracleK, Decay: 0.7, Censored: 5, RiseGain: 12, Room: 2}

// blindHinge is givenSHinge without being told S (nor C): it measures the
// no-load RTT S itself from what a limiter sees, the RTT of each call and
// the level of concurrency it was admitted at (a call admitted as the k-th
// in flight takes about S · max(1, k/C)), and the calls given up.
//
// S: every 250 ms epoch it fits S and C together to the levels' mean RTTs
// (the levels' sums decay by 0.7 per epoch; levels whose calls time out,
// more than 5 %, are left out: their RTTs are cut short by the deadline)
// and takes the fit's S when it beats the best fit with no flat part
// (every level queued, RTT in proportion to the level) by Gain per-call
// variances and its flat part reaches down to 0.6 × the knee. Calls all at
// one level, as at a reached limit above C, or all queued, as after a
// start at 5 × C, prove nothing, so S is never taken from them. When S is
// missing or older than Stale and the limit is reached, a probe holds the
// limit at half its value until ProbeN calls have ended there and S is
// measured (at most 1 s); a probe whose levels are all queued halves again
// (Envoy's periodic minRTT re-measurement, but at half the limit rather
// than a fixed concurrency of a few calls). A probe that measures nothing
// takes its calls' mean RTT as an upper bound of S while none exists, and
// the next probe may come 1 s later.
//
// C: with S, C is fitted as givenSHinge fits it, on the levels up to the limit
// (those above it are from before a cut); a rise that does not beat a flat line
// at S by RiseGain variances is no queue. With Above calls above the fit the
// estimate moves half way there (at once beyond 25 %, forgetting the levels'
// RTTs, which are from before the change and would show the joint fit a false
// flat part) and the limit is Target × it; with no queue in sight, a reached
// limit grows by Grow (GrowN calls at the top level), and a limit not reached
// leaves room for Room × the epoch's top level; Censored calls given up in an
// epoch cut it to Target × the fit, or by 30 %. Measured with the shipped
// contenders, 20 seeds (the figures are in the Adaptive limits notes of
// docs/benchmarks.md):
//
//	cd bench && go test ./adaptivesim -run '^TestDev$' -dev.only '^(setpoint|capacity|hinge .blind.)$' -dev.seeds 20 -v
type blindHinge struct {
	counted
	p       blindParams
	s       float64       // the no-load RTT (ns); 0: not measured yet
	sAt     time.Duration // when s was last measured
	est     float64       // estimated C
	t0      time.Duration
	sum, sq []float64     // per level: Σ RTT, Σ RTT² (ns, ns²), decayed
	n       []float64     // per level: calls, decayed
	to      []float64     // per level: calls given up (timed out), decayed
	fresh   float64       // calls sent since cutAt given up in this epoch
	cutAt   time.Duration // the last cut on calls given up

	probing  bool
	probeAt  time.Duration
	probeLvl int
	probeN   int
	resume   float64
}

func newBlindHinge(sc Scenario, p blindParams) *blindHinge {
	return &blindHinge{counted: counted{limit: float64(sc.Initial)}, p: p,
		sum: make([]float64, 2001), sq: make([]float64, 2001), n: make([]float64, 2001), to: make([]float64, 2001)}
}

func (o *blindHinge) Advance(now time.Duration) {
	o.now = now
	if o.probing {
		if now-o.probeAt >= time.Second {
			o.endProbe()
		} else if ks, _ := o.levels(); o.probeN >= o.p.ProbeN && o.probeN%5 == 0 && o.measure(ks) {
			o.endProbe()
		}
		return
	}
	if now-o.t0 >= 250*time.Millisecond {
		o.decide()
	}
}

// levels returns the levels with at least one (decayed) call answered
// and at most 5 % of their calls given up: the RTTs of the others are cut
// short by the deadline. censored is the calls of those others.
func (o *blindHinge) levels() (ks []int, censored float64) {
	for k := 1; k < len(o.n); k++ {
		if o.to[k] > 0.05*(o.n[k]+o.to[k]) {
			censored += o.n[k] + o.to[k]
			continue
		}
		if o.n[k] >= 1 {
			ks = append(ks, k)
		}
	}
	return ks, censored
}

// jointFit fits S and C to the levels' mean RTTs (least squares weighted by
// the calls) and returns S, C and the gain: how much less the fit's squared
// error is than that of the best fit with no flat part (every level
// queued, RTT in proportion to the level), in per-call variances. Only a
// flat part seen at levels below a rise (or levels flat over a wide span)
// gives a gain: calls all at one level, or all queued, give none.
func (o *blindHinge) jointFit(ks []int) (s, c, gain float64) {
	if len(ks) < 2 {
		return 0, 0, 0
	}
	var q, w, calls float64
	var bp, ap float64 // the proportional fit
	for _, k := range ks {
		m := o.sum[k] / o.n[k]
		q += o.n[k] * m * m
		w += math.Max(0, o.sq[k]-o.sum[k]*m)
		calls += o.n[k]
		bp += o.sum[k] * float64(k)
		ap += o.n[k] * float64(k) * float64(k)
	}
	if calls < 4 {
		return 0, 0, 0
	}
	sseProp := q - bp*bp/ap
	best := math.Inf(1)
	top := float64(ks[len(ks)-1])
	for x := float64(ks[0]); x <= top+0.01; x += 0.25 {
		var a, b float64
		for _, k := range ks {
			g := math.Max(1, float64(k)/x)
			a += o.n[k] * g * g
			b += o.sum[k] * g
		}
		if sse := q - b*b/a; sse < best {
			best, s, c = sse, b/a, x
		}
	}
	// the per-call variance: within the levels and around the fit
	v := (w + best) / (calls - 2)
	if v <= 0 {
		return 0, 0, 0
	}
	// a flat part must reach down to 0.6 × the knee
	var low float64
	for _, k := range ks {
		if float64(k) <= 0.6*c {
			low += o.n[k]
		}
	}
	if low < 3 {
		return s, c, 0
	}
	return s, c, (sseProp - best) / v
}

// fit returns the C that fits the levels' mean RTTs best with S = o.s, the
// calls at levels above it and the highest level seen. A rise that does not
// fit better than a flat line at S by RiseGain per-call variances is not
// proved: fit then returns the top level as C and no calls above it (no
// queue in sight).
func (o *blindHinge) fit(ks []int) (c, above float64, top int) {
	if len(ks) == 0 {
		return 0, 0, 0
	}
	top = ks[len(ks)-1]
	best := math.Inf(1)
	var flat, w, calls float64
	for _, k := range ks {
		m := o.sum[k] / o.n[k]
		d := m - o.s
		flat += o.n[k] * d * d
		w += math.Max(0, o.sq[k]-o.sum[k]*m)
		calls += o.n[k]
	}
	for x := 1.0; x <= float64(top)+0.01; x += 0.25 {
		var sse float64
		for _, k := range ks {
			d := o.sum[k]/o.n[k] - o.s*math.Max(1, float64(k)/x)
			sse += o.n[k] * d * d
		}
		if sse < best {
			best, c = sse, x
		}
	}
	if v := (w + best) / (calls - 1); calls > 2 && v > 0 && (flat-best)/v < o.p.RiseGain {
		return float64(top), 0, top
	}
	for _, k := range ks {
		if float64(k) > c {
			above += o.n[k]
		}
	}
	return c, above, top
}

// measure updates S if the levels show it.
func (o *blindHinge) measure(ks []int) bool {
	s, _, gain := o.jointFit(ks)
	if gain >= o.p.Gain {
		o.s, o.sAt = s, o.now
		return true
	}
	return false
}

func (o *blindHinge) decide() {
	ks, _ := o.levels()
	o.measure(ks)
	reached := o.rejected > 0
	if o.fresh >= o.p.Censored {
		// calls time out: a queue beyond the deadline
		if o.s > 0 {
			c, _, _ := o.fit(ks)
			if c > 0 {
				o.est = c
			}
		}
		if o.est > 0 {
			o.limit = math.Max(1, math.Min(o.limit*0.7, o.p.Target*o.est))
		} else {
			o.limit = math.Max(1, o.limit*0.7)
		}
		o.cutAt = o.now
	} else if o.s > 0 {
		// levels above the limit are from before a cut: stale
		var fk []int
		for _, k := range ks {
			if k <= o.Limit() {
				fk = append(fk, k)
			}
		}
		c, above, top := o.fit(fk)
		switch {
		case above >= o.p.Above:
			if o.est == 0 || math.Abs(c-o.est) > 0.25*o.est {
				if o.est > 0 {
					// the levels' RTTs are from before a change of C:
					// a queue building or draining
					clear(o.sum)
					clear(o.sq)
					clear(o.n)
					clear(o.to)
				}
				o.est = c
			} else {
				o.est += 0.5 * (c - o.est)
			}
			o.limit = math.Max(1, o.p.Target*o.est)
		case reached && above == 0 && o.n[top] >= o.p.GrowN:
			o.limit = math.Max(o.limit*o.p.Grow, o.limit+1)
		}
		if above == 0 && !reached && top > 0 {
			// no queue in sight, limit not reached: room for bursts
			o.limit = math.Max(o.limit, o.p.Room*float64(top))
		}
	}
	o.epoch()
	if reached && (o.s == 0 || o.now-o.sAt > o.p.Stale) {
		o.startProbe(o.limit)
	}
}

func (o *blindHinge) epoch() {
	for k := range o.n {
		o.sum[k] *= o.p.Decay
		o.sq[k] *= o.p.Decay
		o.n[k] *= o.p.Decay
		o.to[k] *= o.p.Decay
	}
	o.t0 = o.now
	o.rejected = 0
	o.fresh = 0
}

// startProbe holds the limit at a share of from until ProbeN calls have
// ended at that level or below.
func (o *blindHinge) startProbe(from float64) {
	o.probing, o.probeAt, o.probeN, o.resume = true, o.now, 0, from
	o.probeLvl = max(1, int(math.Floor(o.p.Probe*o.limit)))
	o.limit = float64(o.probeLvl)
}

func (o *blindHinge) endProbe() {
	o.probing = false
	ks, _ := o.levels()
	if !o.measure(ks) && o.probeLvl > 1 && len(ks) >= 2 {
		// every level queued (the best knee at the lowest level, the
		// highest at least 1.5 × it): C is below the probe's level
		_, c, _ := o.jointFit(ks)
		if c <= float64(ks[0])+0.25 && ks[len(ks)-1] >= 3*ks[0]/2 {
			o.startProbe(o.resume)
			return
		}
	}
	if o.s == 0 || o.sAt < o.probeAt {
		// not measured: the mean RTT at the probe's level or below, an
		// upper bound of S
		var sum, n float64
		for _, k := range ks {
			if k <= o.probeLvl {
				sum += o.sum[k]
				n += o.n[k]
			}
		}
		if o.s == 0 && n > 0 {
			o.s = sum / n
		}
		o.sAt = o.now - o.p.Stale + time.Second
	}
	o.limit = o.resume
	o.t0 = o.now
	o.rejected = 0
}

func (o *blindHinge) Try() (any, bool) {
	if !o.admit() {
		return nil, false
	}
	return hingeCall{o.now, min(o.inFlight, len(o.n)-1)}, true
}

func (o *blindHinge) Done(tok any, timedOut bool) {
	o.inFlight--
	c := tok.(hingeCall)
	if timedOut {
		o.to[c.level]++
		if c.sent >= o.cutAt {
			o.fresh++
		}
		return
	}
	r := float64(o.now - c.sent)
	o.sum[c.level] += r
	o.sq[c.level] += r * r
	o.n[c.level]++
	if o.probing && c.sent >= o.probeAt && c.level <= o.probeLvl {
		o.probeN++
	}
}
