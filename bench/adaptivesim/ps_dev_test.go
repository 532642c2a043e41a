package adaptivesim

import (
	"flag"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead/adaptive"
)

// With -dev.ps the dev harness runs the matrix's cells, goals and
// contenders on a processor-sharing partner (SimulatePS) instead of the
// M/G/c queue, e.g. the contenders of issue 23 on every cell, 20 seeds:
//
//	cd bench && go test ./adaptivesim -run '^TestDev$' -dev.ps -dev.seeds 20
//
// -dev.only picks the contenders (default: psContenders), -dev.cells the
// cells, -dev.cell prints each contender's cell table. The best static
// limits on PS are cached apart from the queue's, in -dev.psstatic.
var (
	devPS       = flag.Bool("dev.ps", false, "TestDev*: simulate a processor-sharing partner instead of the M/G/c queue")
	devPSStatic = flag.String("dev.psstatic", "/tmp/dev/static-ps.json", "TestDev*: the cache of the best static limits on PS")
)

// psContenders are the contenders measured on PS by default: the default
// algorithm typed and plain, setpoint, hinge, the reference algorithms in
// both wirings, failsafe-go and the oracle. On 20 seeds, hinge met every
// goal in 198 of the 1,800 runs on PS (322 on the queue) and p99 in 513
// (1,706), its limit's median 2.44 × C; capacity 200 (199) and 1,387
// (1,688), 1.30 × C; setpoint 274 (282) and 1,346 (1,664).
const psContenders = `^(capacity|capacity \(plain interface\)|setpoint|hinge|(aimd|vegas|gradient2) \((per call|1 s windows)\)|failsafe-go.*|oracle.*)$`

// hingeLog wraps a Hinge and prints, every 250 ms of its clock (the sum
// of the samples' Elapsed, as Hinge keeps it), the limit, Hinge's S and C,
// the mean RTT of the calls granted in each quarter of the limit's levels
// (flat on PS, bent at C on the queue), the calls given up, and C by
// Little's law from the finish rate and S (finishes per second × S).
type hingeLog struct {
	h                   *adaptive.Hinge
	now, t0             time.Duration
	from                float64
	n, drops            int
	sum, cnt            [4]float64
	changes             int
	lowLimit, highLimit float64
}

func (l *hingeLog) Update(limit float64, s adaptive.Sample) float64 {
	l.now += s.Elapsed
	if l.cnt == [4]float64{} && l.n == 0 {
		l.from, l.lowLimit, l.highLimit = limit, limit, limit
	}
	l.n += s.N
	l.drops += s.Drops
	if s.Drops == 0 {
		q := min(3, max(0, int(4*float64(s.InFlight-1)/max(limit, 1))))
		l.sum[q] += float64(s.RTT)
		l.cnt[q]++
	}
	next := l.h.Update(limit, s)
	if next != limit {
		l.changes++
	}
	l.lowLimit, l.highLimit = min(l.lowLimit, next), max(l.highLimit, next)
	if l.now-l.t0 >= 250*time.Millisecond {
		var qs strings.Builder
		for q := range 4 {
			if l.cnt[q] == 0 {
				qs.WriteString("     -")
				continue
			}
			fmt.Fprintf(&qs, " %5.1f", l.sum[q]/l.cnt[q]/1e6)
		}
		rate := float64(l.n) / (l.now - l.t0).Seconds()
		fmt.Printf("%6.2fs limit %5.1f -> %5.1f (range %5.1f-%5.1f, %d changes) S %5.1fms C %5.1f  RTT ms by level quarter%s  given up %3d  Little rate×S %5.1f\n",
			l.now.Seconds(), l.from, next, l.lowLimit, l.highLimit, l.changes, l.h.NoLoadRTT()/1e6, l.h.EstimatedCapacity(), qs.String(), l.drops, rate*l.h.NoLoadRTT()/1e9)
		*l = hingeLog{h: l.h, now: l.now, t0: l.now, from: next, lowLimit: next, highLimit: next}
		l.n = -1 // printed: the next sample opens the next epoch
	}
	if l.n < 0 {
		l.n = 0
	}
	return next
}

// TestDevHingeLog prints hingeLog for the matrix's hinge contender on
// the cell -dev.trace, seed -dev.seed: on the processor-sharing partner
// with -dev.ps, on the queue without.
//
//	cd bench && go test ./adaptivesim -run '^TestDevHingeLog$' -dev.trace 'σ 0.3, load 1.5×, step, start C/5' -dev.ps -v
func TestDevHingeLog(t *testing.T) {
	c, sc := devTraceCell(t)
	cfg := hingeConfig
	cfg.Algorithm = func() adaptive.Algorithm { return &hingeLog{h: &adaptive.Hinge{}} }
	sim := devModel()
	fmt.Println("mean service", sc.Partner.Mean(), "PS", *devPS)
	run := sim(sc, "hinge", NewAdaptive(cfg, Typed, sc.Initial))
	r := Measure(sc, run, c.Band(), c.Partner.UnloadedP99())
	fmt.Printf("goodput %.1f p99 %.2f conv %v\n", r.Goodput, r.P99, r.Converge)
}

var devRatio = flag.Bool("dev.ratio", false, "TestDevRatio: where each contender holds its limit, relative to C")

// TestDevRatio prints, per contender (-dev.only, default psContenders but
// failsafe-go), the 10th, 50th and 90th percentiles of its limit's 1 s
// average over C, over the time the convergence goal looks at (overloaded,
// from Settle after a change) in every cell (-dev.cells) and seed: on the
// processor-sharing partner with -dev.ps, on the queue without.
//
//	cd bench && go test ./adaptivesim -run '^TestDevRatio$' -dev.ratio -dev.ps -dev.seeds 5 -v
func TestDevRatio(t *testing.T) {
	if !*devRatio {
		t.Skip()
	}
	sel := *devOnly
	if sel == "" {
		sel = psContenders
	}
	only := regexp.MustCompile(sel)
	cre := regexp.MustCompile(*devCells)
	sim := devModel()
	for _, ct := range devContenders() {
		if !only.MatchString(ct.Name) || ct.Bubble {
			continue
		}
		var cells []Cell
		for _, c := range Cells() {
			if cre.MatchString(c.String()) {
				cells = append(cells, c)
			}
		}
		ratios := make([][]float64, len(cells)*(*devSeeds))
		var jobs []func()
		for i, c := range cells {
			for s := range *devSeeds {
				jobs = append(jobs, func() {
					sc := c.Scenario(uint64(s + 1))
					run := sim(sc, ct.Name, ct.New(sc))
					avg := movingAverage(run.Limits, int(time.Second/sc.Trace))
					mean := sc.Partner.Mean()
					var rs []float64
					for k, l := range avg {
						tt := time.Duration(k) * sc.Trace
						seg := sc.segment(tt)
						if tt-sc.lastChange(tt) < Settle || !overloaded(seg, mean) {
							continue
						}
						rs = append(rs, l/float64(seg.Capacity))
					}
					ratios[i*(*devSeeds)+s] = rs
				})
			}
		}
		parallel(jobs)
		var all []float64
		for _, rs := range ratios {
			all = append(all, rs...)
		}
		slices.Sort(all)
		q := func(p float64) float64 { return all[int(p*float64(len(all)-1))] }
		fmt.Printf("%-40s limit / C (1 s average, overloaded steady state): p10 %.2f  median %.2f  p90 %.2f\n", ct.Name, q(0.1), q(0.5), q(0.9))
	}
}
