package adaptivesim

import (
	"math"
	"time"

	"github.com/rxbulkhead/bulkhead/adaptive"
)

// devContenders are the matrix's contenders and two dev-only limiters that
// are told the partner's mean service time S (the no-load RTT every
// algorithm of package adaptive has to estimate) but not its capacity C.
// They measure how far the goals are from reach once S is known, which no
// limiter one can build is:
//
//	cd bench && go test ./adaptivesim -run '^TestDev$' -dev.only '^given S' -dev.seeds 20 -v
//
// The third, hinge (blind), is the hinge that measures S itself
// (blindHinge), which adaptive.Hinge (the contender hinge) ports; hinge
// (max cut 0.5) is that port under the controller's default
// MaxCutPerSecond; hinge (plain interface) is the port fed as the
// operators feed it (each call's start given back: exact RTTs), hinge
// (bare FinishCall) and hinge (watched) as code calling FinishCall itself
// and Watch of a bare Semaphore.FinishCall feed it (RTTs and levels matched
// to the oldest grant), and hinge (watched keyed registry, Lease) as a keyed
// integration feeds it (each finish carries its duration, which finds the
// call's own grant): the wirings it would meet as the default:
//
//	cd bench && go test ./adaptivesim -run '^TestDev$' -dev.only '^hinge' -dev.seeds 20 -v
func devContenders() []Contender {
	return append(Contenders(),
		Contender{Name: "given S: Little", New: func(sc Scenario) Limiter { return newGivenSLittle(sc) }},
		Contender{Name: "given S: hinge", New: func(sc Scenario) Limiter { return newGivenSHinge(sc) }},
		Contender{Name: "hinge (blind)", New: func(sc Scenario) Limiter { return newBlindHinge(sc, blindDefaults) }},
		hingeHalfCut,
		adaptiveContender(adaptive.NameHinge+" (plain interface)", hingeConfig, Plain),
		adaptiveContender(adaptive.NameHinge+" (bare FinishCall)", hingeConfig, Matched),
		adaptiveContender(adaptive.NameHinge+" (watched)", hingeConfig, Watched),
		Contender{Name: adaptive.NameHinge + " (watched keyed registry, Lease)", New: func(sc Scenario) Limiter { return NewLeased(hingeConfig, sc.Initial) }},
	)
}

// givenTarget is both limiters' limit as a multiple of the estimated C,
// the oracle's.
const givenTarget = OracleK

// counted is what both limiters share: a limit on the calls in flight and
// the virtual time.
type counted struct {
	limit    float64
	now      time.Duration
	inFlight int
	rejected int // in the current epoch
}

func (c *counted) admit() bool {
	if c.inFlight >= int(math.Round(c.limit)) {
		c.rejected++
		return false
	}
	c.inFlight++
	return true
}

func (c *counted) Limit() int { return int(math.Round(c.limit)) }

// givenSLittle estimates C by Little's law in 250 ms epochs (at least 20
// calls): the busy servers, calls ended per second × S, in an epoch whose
// mean RTT shows a queue (beyond 1.03 × S by two standard errors, or 1 % of
// the calls timed out), and holds 1.1 × that estimate. An epoch at a
// reached limit whose mean RTT is within 1.02 × S grows the limit by 20 %.
type givenSLittle struct {
	counted
	s, est  float64 // ns; permits
	t0      time.Duration
	n, to   int
	sum, sq float64
}

func newGivenSLittle(sc Scenario) *givenSLittle {
	return &givenSLittle{counted: counted{limit: float64(sc.Initial)}, s: float64(sc.Partner.Mean())}
}

func (o *givenSLittle) Advance(now time.Duration) {
	o.now = now
	if now-o.t0 >= 250*time.Millisecond && o.n+o.to >= 20 {
		o.decide()
	}
}

func (o *givenSLittle) decide() {
	n := float64(o.n)
	mean, se := 0.0, 0.0
	if o.n > 0 {
		mean = o.sum / n
	}
	if o.n > 1 {
		se = math.Sqrt(math.Max(0, (o.sq-n*mean*mean)/(n-1)) / n)
	}
	busy := (n + float64(o.to)) / float64(o.now-o.t0) * o.s
	queue := o.n > 0 && mean-2*se > o.s*1.03 || float64(o.to) >= math.Max(2, 0.01*(n+float64(o.to)))
	unqueued := o.n > 0 && mean < o.s*1.02 && o.to < 2
	switch {
	case queue:
		if o.est == 0 || math.Abs(busy-o.est) > 0.25*o.est {
			o.est = busy
		} else {
			o.est += 0.5 * (busy - o.est)
		}
		o.limit = math.Max(1, givenTarget*o.est)
	case o.rejected > 0 && unqueued:
		o.est = math.Max(o.est, busy)
		o.limit = math.Max(o.limit*1.2, o.limit+1)
	}
	o.t0 = o.now
	o.n, o.to, o.rejected, o.sum, o.sq = 0, 0, 0, 0, 0
}

func (o *givenSLittle) Try() (any, bool) {
	if !o.admit() {
		return nil, false
	}
	return o.now, true
}

func (o *givenSLittle) Done(sent any, timedOut bool) {
	o.inFlight--
	if timedOut {
		o.to++
		return
	}
	r := float64(o.now - sent.(time.Duration))
	o.n++
	o.sum += r
	o.sq += r * r
}

// givenSHinge estimates C from the RTT per level of concurrency: a call
// admitted as the k-th in flight waits behind k−C others when k > C, so
// its expected RTT is S·max(1, k/C). Every 250 ms it fits C to the mean
// RTT of each level (least squares weighted by the calls, C on a grid of
// quarter permits; the levels' sums decay by 0.7 per epoch) and, with at
// least 30 calls at levels above the fitted C, moves its estimate half way
// there (at once for a change beyond 25 %) and holds 1.1 × it. A reached
// limit with no calls above the fit grows by 20 % while no estimate
// exists, or once the top level has 30 calls.
type givenSHinge struct {
	counted
	s, est float64
	t0     time.Duration
	sum, n []float64 // per level: Σ RTT (ns) and calls, decayed
}

func newGivenSHinge(sc Scenario) *givenSHinge {
	return &givenSHinge{counted: counted{limit: float64(sc.Initial)}, s: float64(sc.Partner.Mean()),
		sum: make([]float64, 2001), n: make([]float64, 2001)}
}

func (o *givenSHinge) Advance(now time.Duration) {
	o.now = now
	if now-o.t0 >= 250*time.Millisecond {
		o.decide()
	}
}

// fit returns the C that fits the levels' mean RTTs best, the calls at
// levels above it, and the highest level seen.
func (o *givenSHinge) fit() (c, above float64, top int) {
	var ks []int
	for k := 1; k < len(o.n); k++ {
		if o.n[k] >= 1 {
			ks = append(ks, k)
			top = k
		}
	}
	best := math.Inf(1)
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
	for _, k := range ks {
		if float64(k) > c {
			above += o.n[k]
		}
	}
	return c, above, top
}

func (o *givenSHinge) decide() {
	c, above, top := o.fit()
	switch {
	case above >= 30:
		if o.est == 0 || math.Abs(c-o.est) > 0.25*o.est {
			o.est = c
		} else {
			o.est += 0.5 * (c - o.est)
		}
		o.limit = math.Max(1, givenTarget*o.est)
	case o.rejected > 0 && above == 0 && (o.est == 0 || o.n[top] >= 30):
		o.limit = math.Max(o.limit*1.2, o.limit+1)
	}
	for k := range o.n {
		o.sum[k] *= 0.7
		o.n[k] *= 0.7
	}
	o.t0 = o.now
	o.rejected = 0
}

// hingeCall is a call of givenSHinge: when it was sent and its level.
type hingeCall struct {
	sent  time.Duration
	level int
}

func (o *givenSHinge) Try() (any, bool) {
	if !o.admit() {
		return nil, false
	}
	return hingeCall{o.now, min(o.inFlight, len(o.n)-1)}, true
}

func (o *givenSHinge) Done(tok any, timedOut bool) {
	o.inFlight--
	if timedOut {
		return
	}
	c := tok.(hingeCall)
	o.sum[c.level] += float64(o.now - c.sent)
	o.n[c.level]++
}

// hingeHalfCut is the hinge contender under the controller's default
// MaxCutPerSecond (0.5), to measure what the bound costs it.
var hingeHalfCut = Contender{Name: "hinge (max cut 0.5)", New: func(sc Scenario) Limiter {
	cfg := hingeConfig
	cfg.MaxCutPerSecond = 0
	return NewAdaptive(cfg, Typed, sc.Initial)
}}
