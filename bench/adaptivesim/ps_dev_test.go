package adaptivesim

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead/adaptive"
)

// The PS dev harness: the matrix's cells, goals and contenders on a
// processor-sharing partner (SimulatePS) instead of the M/G/c queue, e.g.
// the contenders of issue 23 on every cell, 20 seeds:
//
//	cd bench && go test ./adaptivesim -run '^TestDevPS$' -dev.ps -dev.seeds 20
//
// -dev.only picks the contenders (default: psContenders), -dev.cells the
// cells, -dev.cell prints each contender's cell table. The best static
// limits on PS are cached apart from the queue's, in -dev.psstatic.
var (
	devPS       = flag.Bool("dev.ps", false, "TestDevPS: run the contenders on a processor-sharing partner")
	devPSStatic = flag.String("dev.psstatic", "/tmp/dev/static-ps.json", "TestDevPS: the cache of the best static limits on PS")
)

// psContenders are the contenders measured on PS by default: the default
// algorithm typed and plain, setpoint, hinge, the reference algorithms in
// both wirings, failsafe-go and the oracle. On 20 seeds, hinge met every
// goal in 198 of the 1,800 runs on PS (322 on the queue) and p99 in 513
// (1,706), its limit's median 2.44 × C; capacity 200 (199) and 1,387
// (1,688), 1.30 × C; setpoint 274 (282) and 1,346 (1,664).
const psContenders = `^(capacity|capacity \(plain interface\)|setpoint|hinge|(aimd|vegas|gradient2) \((per call|1 s windows)\)|failsafe-go.*|oracle.*)$`

// psStatic returns the best static limit of each cell on PS (the sweep of
// the matrix: staticGrid(3) on seeds 1 and 2, best mean goodput) and its
// results on seeds 1 to seeds.
func psStatic(cells []Cell, seeds int) map[string]devStaticCell {
	grid := staticGrid(3)
	sweep := make([][][]Result, len(cells))
	var jobs []func()
	for i, c := range cells {
		sweep[i] = make([][]Result, len(grid))
		p99 := c.Partner.UnloadedP99()
		for g, n := range grid {
			sweep[i][g] = make([]Result, 2)
			for s := range 2 {
				jobs = append(jobs, func() {
					sc := c.Scenario(uint64(s + 1))
					sweep[i][g][s] = Measure(sc, SimulatePS(sc, "static", NewStatic(n)), c.Band(), p99)
				})
			}
		}
	}
	parallel(jobs)
	out := make([]devStaticCell, len(cells))
	jobs = nil
	for i, c := range cells {
		best, bestG := -1.0, 0
		for g := range grid {
			sum := sweep[i][g][0].Goodput + sweep[i][g][1].Goodput
			if sum > best {
				best, bestG = sum, g
			}
		}
		n := grid[bestG]
		out[i] = devStaticCell{Best: n, Static: make([]Result, seeds)}
		p99 := c.Partner.UnloadedP99()
		for s := range seeds {
			jobs = append(jobs, func() {
				sc := c.Scenario(uint64(s + 1))
				out[i].Static[s] = Measure(sc, SimulatePS(sc, "static", NewStatic(n)), c.Band(), p99)
			})
		}
	}
	parallel(jobs)
	m := map[string]devStaticCell{}
	for i, c := range cells {
		m[c.String()] = out[i]
	}
	return m
}

// TestDevPS prints TestDev's summary on a processor-sharing partner, and
// each contender's worst seed for goodput and for p99, with its cell.
func TestDevPS(t *testing.T) {
	if !*devPS {
		t.Skip()
	}
	sel := *devOnly
	if sel == "" {
		sel = psContenders
	}
	only := regexp.MustCompile(sel)
	cre := regexp.MustCompile(*devCells)
	cache := map[string]devStaticCell{}
	if b, err := os.ReadFile(*devPSStatic); err == nil {
		_ = json.Unmarshal(b, &cache)
	}
	var cells, missing []Cell
	for _, c := range Cells() {
		if !cre.MatchString(c.String()) {
			continue
		}
		cells = append(cells, c)
		if sc, ok := cache[c.String()]; !ok || len(sc.Static) < *devSeeds {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		start := time.Now()
		for k, v := range psStatic(missing, *devSeeds) {
			cache[k] = v
		}
		b, _ := json.Marshal(cache)
		_ = os.MkdirAll(filepath.Dir(*devPSStatic), 0o755)
		_ = os.WriteFile(*devPSStatic, b, 0o644)
		fmt.Printf("static sweep of %d cells: %v\n", len(missing), time.Since(start).Round(time.Second))
	}
	var cs []Contender
	for _, c := range devContenders() {
		if only.MatchString(c.Name) {
			cs = append(cs, c)
		}
	}
	start := time.Now()
	out := make([]CellResult, len(cells))
	var jobs []func()
	for i, c := range cells {
		st := cache[c.String()]
		out[i] = CellResult{Cell: c, BestStatic: st.Best, Static: st.Static[:*devSeeds], Runs: map[string][]Result{}}
		p99 := c.Partner.UnloadedP99()
		for _, ct := range cs {
			res := make([]Result, *devSeeds)
			out[i].Runs[ct.Name] = res
			for s := range *devSeeds {
				jobs = append(jobs, func() {
					sc := c.Scenario(uint64(s + 1))
					sim := func() { res[s] = Measure(sc, SimulatePS(sc, ct.Name, ct.New(sc)), c.Band(), p99) }
					if ct.Bubble {
						bubble(t)(sim)
					} else {
						sim()
					}
				})
			}
		}
	}
	parallel(jobs)
	fmt.Printf("%d cells × %d seeds on PS, %d contenders: %v\n", len(cells), *devSeeds, len(cs), time.Since(start).Round(time.Second))
	ns := []string{"static"}
	for _, c := range cs {
		ns = append(ns, c.Name)
	}
	fmt.Println(SummaryTable(out, ns))
	for _, n := range ns {
		var all, conv, good, p99 int
		type worst struct {
			cell  string
			seed  int
			v     float64
			r     Result
			goals Goals
		}
		wg, wp := worst{v: 10}, worst{v: -1}
		for _, cr := range out {
			rs := cr.Runs[n]
			if n == "static" {
				rs = cr.Static
			}
			for k, r := range rs {
				g := Check(r, cr.Static[k])
				conv += b2i(g.Converge)
				all += b2i(g.All())
				good += b2i(g.Goodput)
				p99 += b2i(g.P99)
				if x := r.Goodput / cr.Static[k].Goodput; x < wg.v {
					wg = worst{cr.Cell.String(), k + 1, x, r, g}
				}
				if r.P99 > wp.v {
					wp = worst{cr.Cell.String(), k + 1, r.P99, r, g}
				}
			}
		}
		fmt.Printf("%s: runs (cell × seed) meeting every goal %d, convergence %d, goodput %d, p99 %d\n", n, all, conv, good, p99)
		for _, w := range []struct {
			what string
			w    worst
		}{{"goodput", wg}, {"p99", wp}} {
			fmt.Printf("  worst %s: %s, seed %d: goodput %.2fx p99 %.2fx converge %v floor %v missed %q\n", w.what, w.w.cell, w.w.seed,
				w.w.r.Goodput/cache[w.w.cell].Static[w.w.seed-1].Goodput, w.w.r.P99, w.w.r.Converge, w.w.r.AtFloor, missed(w.w.goals))
		}
	}
	if *devCellT {
		for _, n := range ns {
			fmt.Println(n)
			fmt.Println(strings.TrimSpace(CellTable(out, n)))
		}
	}
}

// TestDevPSTrace prints, for the cell -dev.trace and seed -dev.seed on PS,
// each contender's figures and its limit (1 s average) every 250 ms, as
// TestDevTrace does on the queue; -dev.sweep adds the static limits.
func TestDevPSTrace(t *testing.T) {
	if *devTrace == "" || !*devPS {
		t.Skip()
	}
	c, ok := cellNamed(*devTrace)
	if !ok {
		t.Fatal("no cell")
	}
	sc := c.Scenario(uint64(*devSeed))
	p99 := c.Partner.UnloadedP99()
	if *devSweep {
		for _, n := range staticGrid(3) {
			r := Measure(sc, SimulatePS(sc, "static", NewStatic(n)), c.Band(), p99)
			fmt.Printf("static %3d: goodput %.1f p99 %.2f rejected %d\n", n, r.Goodput, r.P99, r.Rejected)
		}
	}
	only := regexp.MustCompile(*devOnly)
	for _, ct := range devContenders() {
		if !only.MatchString(ct.Name) || ct.Bubble {
			continue
		}
		run := SimulatePS(sc, ct.Name, ct.New(sc))
		r := Measure(sc, run, c.Band(), p99)
		fmt.Printf("%s: goodput %.1f p99 %.2f conv %v rejected %d/%d floor %v\n", ct.Name, r.Goodput, r.P99, r.Converge, r.RejectedUnderload, r.Rejected, r.AtFloor)
		avg := movingAverage(run.Limits, 100)
		var b strings.Builder
		for k := 0; k < len(avg); k += 25 {
			if k%500 == 0 {
				fmt.Fprintf(&b, "\n%4.1fs C=%2d:", float64(k)/100, sc.segment(time.Duration(k)*sc.Trace).Capacity)
			}
			fmt.Fprintf(&b, " %5.1f", avg[k])
		}
		fmt.Println(b.String())
	}
}

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

// TestDevPSHingeLog prints hingeLog for the matrix's hinge contender on
// the cell -dev.trace, seed -dev.seed: on the processor-sharing partner
// with -dev.ps, on the queue without.
//
//	cd bench && go test ./adaptivesim -run '^TestDevPSHingeLog$' -dev.trace 'σ 0.3, load 1.5×, step, start C/5' -dev.ps -v
func TestDevPSHingeLog(t *testing.T) {
	if *devTrace == "" {
		t.Skip()
	}
	c, ok := cellNamed(*devTrace)
	if !ok {
		t.Fatal("no cell")
	}
	sc := c.Scenario(uint64(*devSeed))
	cfg := hingeConfig
	cfg.Algorithm = func() adaptive.Algorithm { return &hingeLog{h: &adaptive.Hinge{}} }
	sim := Simulate
	if *devPS {
		sim = SimulatePS
	}
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
	sim := Simulate
	if *devPS {
		sim = SimulatePS
	}
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
