// The dev harness: tests that run only with their -dev.* flag and print
// what they measure (they assert nothing), for working on an algorithm
// with parts of the matrix, e.g. the default on every cell, 20 seeds:
//
//	cd bench && go test ./adaptivesim -run '^TestDev$' -dev.only '^capacity' -dev.seeds 20
//
// The best static limits are cached in /tmp/dev/static.json (-dev.static).
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
	"sync"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead/adaptive"
)

var (
	devOnly  = flag.String("dev.only", "", "TestDev: contenders matching")
	devCells = flag.String("dev.cells", ".", "TestDev: cells matching")
	devSeeds = flag.Int("dev.seeds", 20, "TestDev: seeds")
	devCellT = flag.Bool("dev.cell", false, "TestDev: print the cell table")
)

var devStaticFlag = flag.String("dev.static", "/tmp/dev/static.json", "TestDev*: the cache of the best static limits")

type devStaticCell struct {
	Best   int
	Static []Result
}

// devModel is the partner the dev harness simulates: the M/G/c queue of
// the published matrix, or with -dev.ps the processor-sharing partner.
func devModel() func(Scenario, string, Limiter) Run {
	if *devPS {
		return SimulatePS
	}
	return Simulate
}

// devCellList returns the cells -dev.cells matches.
func devCellList() []Cell {
	cre := regexp.MustCompile(*devCells)
	var cells []Cell
	for _, c := range Cells() {
		if cre.MatchString(c.String()) {
			cells = append(cells, c)
		}
	}
	return cells
}

// devStatic returns, by cell name, the best static limit of each cell on
// devModel's partner and its results on seeds 1 to seeds: from the cache
// (-dev.static, or -dev.psstatic with -dev.ps), where the cells missing
// from it are swept first as the matrix sweeps them (RunMatrix).
func devStatic(cells []Cell, seeds int) map[string]devStaticCell {
	path := *devStaticFlag
	if *devPS {
		path = *devPSStatic
	}
	cache := map[string]devStaticCell{}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &cache)
	}
	var missing []Cell
	for _, c := range cells {
		if sc, ok := cache[c.String()]; !ok || len(sc.Static) < seeds {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return cache
	}
	start := time.Now()
	for _, r := range RunMatrix(missing, nil, Options{Seeds: seeds, StaticSeeds: 2, StaticGrid: staticGrid(3), Model: devModel()}) {
		cache[r.Cell.String()] = devStaticCell{r.BestStatic, r.Static}
	}
	b, _ := json.Marshal(cache)
	_ = os.MkdirAll(filepath.Dir(path), 0o755)
	_ = os.WriteFile(path, b, 0o644)
	fmt.Printf("static sweep of %d cells: %v\n", len(missing), time.Since(start).Round(time.Second))
	return cache
}

// TestDev prints, for the contenders -dev.only matches (with -dev.ps and
// no -dev.only: psContenders) on the cells -dev.cells matches, the
// matrix's summary table, each contender's runs (cell × seed) meeting each
// goal, and its worst seed for goodput and for p99, with its cell;
// -dev.cell adds each contender's cell table.
func TestDev(t *testing.T) {
	sel := *devOnly
	if sel == "" && *devPS {
		sel = psContenders
	}
	if sel == "" {
		t.Skip()
	}
	only := regexp.MustCompile(sel)
	cells := devCellList()
	static := devStatic(cells, *devSeeds)
	var cs []Contender
	for _, c := range devContenders() {
		if only.MatchString(c.Name) {
			cs = append(cs, c)
		}
	}
	start := time.Now()
	out := RunMatrix(cells, cs, Options{Seeds: *devSeeds, Bubble: bubble(t), Model: devModel()})
	for i := range out {
		st := static[out[i].Cell.String()]
		out[i].BestStatic, out[i].Static = st.Best, st.Static[:*devSeeds]
	}
	fmt.Printf("%d cells × %d seeds (processor sharing: %v), %d contenders: %v\n", len(cells), *devSeeds, *devPS, len(cs), time.Since(start).Round(time.Second))
	ns := []string{"static"}
	for _, c := range cs {
		ns = append(ns, c.Name)
	}
	fmt.Println(SummaryTable(out, ns))
	for _, n := range ns {
		devRunCounts(out, n)
	}
	if *devCellT {
		for _, n := range ns {
			fmt.Println(n)
			fmt.Println(strings.TrimSpace(CellTable(out, n)))
		}
	}
}

// devRunCounts prints contender n's runs (cell × seed) meeting each goal,
// a finer count than the cells, and its worst seeds for goodput and p99.
func devRunCounts(out []CellResult, n string) {
	var all, conv, good, p99 int
	type worst struct {
		cell  string
		seed  int
		v     float64 // the figure it is worst at
		good  float64 // goodput over the best static limit's
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
			x := r.Goodput / cr.Static[k].Goodput
			if x < wg.v {
				wg = worst{cr.Cell.String(), k + 1, x, x, r, g}
			}
			if r.P99 > wp.v {
				wp = worst{cr.Cell.String(), k + 1, r.P99, x, r, g}
			}
		}
	}
	fmt.Printf("%s: runs (cell × seed) meeting every goal %d, convergence %d, goodput %d, p99 %d\n", n, all, conv, good, p99)
	for _, w := range []struct {
		what string
		w    worst
	}{{"goodput", wg}, {"p99", wp}} {
		fmt.Printf("  worst %s: %s, seed %d: goodput %.2fx p99 %.2fx converge %v floor %v missed %q\n", w.what, w.w.cell, w.w.seed,
			w.w.good, w.w.r.P99, w.w.r.Converge, w.w.r.AtFloor, missed(w.w.goals))
	}
}

var (
	devTrace = flag.String("dev.trace", "", "TestDevTrace: cell name")
	devSeed  = flag.Int("dev.seed", 1, "TestDevTrace: seed")
	devSweep = flag.Bool("dev.sweep", false, "TestDevTrace: static sweep")
)

// devTraceCell returns the cell -dev.trace names and its scenario of seed
// -dev.seed; it skips the test without -dev.trace and fails it on a name
// that is no cell.
func devTraceCell(t *testing.T) (Cell, Scenario) {
	t.Helper()
	if *devTrace == "" {
		t.Skip()
	}
	c, ok := cellNamed(*devTrace)
	if !ok {
		t.Fatalf("-dev.trace %q names no cell", *devTrace)
	}
	return c, c.Scenario(uint64(*devSeed))
}

func TestDevTrace(t *testing.T) {
	c, sc := devTraceCell(t)
	p99 := c.Partner.UnloadedP99()
	if *devSweep {
		for _, n := range staticGrid(3) {
			r := Measure(sc, devModel()(sc, "static", NewStatic(n)), c.Band(), p99)
			fmt.Printf("static %3d: goodput %.1f p99 %.2f rejected %d\n", n, r.Goodput, r.P99, r.Rejected)
		}
	}
	only := regexp.MustCompile(*devOnly)
	for _, ct := range devContenders() {
		if !only.MatchString(ct.Name) || ct.Bubble {
			continue
		}
		run := devModel()(sc, ct.Name, ct.New(sc))
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

type logAlg struct {
	c interface {
		adaptive.Algorithm
		NoLoadRTT() float64
	}
	clock func() time.Duration
}

func (l *logAlg) Update(limit float64, s adaptive.Sample) float64 {
	next := l.c.Update(limit, s)
	if next != limit || *devAll {
		est := 0.0
		if sp, ok := l.c.(*adaptive.SetPoint); ok {
			est = sp.EstimatedCapacity()
		}
		fmt.Printf("%6.2fs limit %5.1f -> %5.1f  rtt %5.1fms dev %5.1f n %3d infl %3d drops %d noLoad %5.2fms est %5.1f\n",
			l.clock().Seconds(), limit, next, float64(s.RTT)/1e6, float64(s.RTTDev)/1e6, s.N, s.InFlight, s.Drops, l.c.NoLoadRTT()/1e6, est)
	}
	return next
}

func TestDevLog(t *testing.T) {
	_, sc := devTraceCell(t)
	var a *Adaptive
	la := &logAlg{c: &adaptive.Capacity{}, clock: func() time.Duration { return a.clock.Now().Sub(epoch) }}
	if strings.Contains(*devOnly, "setpoint") {
		la.c = &adaptive.SetPoint{}
	}
	api := Typed
	if strings.Contains(*devOnly, "plain") {
		api = Plain
	}
	a = NewAdaptive(adaptive.Config{Algorithm: func() adaptive.Algorithm { return la }}, api, sc.Initial)
	fmt.Println("mean service", sc.Partner.Mean())
	devModel()(sc, "x", a)
}

var devAll = flag.Bool("dev.all", false, "TestDevLog: every window")

var devBand = flag.Bool("dev.band", false, "TestDevBand")

// TestDevBand: for each selected cell, static limits across the band,
// worst-seed goodput ratio against the cell's best static and worst p99.
func TestDevBand(t *testing.T) {
	if !*devBand {
		t.Skip()
	}
	cre := regexp.MustCompile(*devCells)
	cache := devStatic(devCellList(), *devSeeds)
	for _, c := range Cells() {
		if !cre.MatchString(c.String()) {
			continue
		}
		st := cache[c.String()]
		p99 := c.Partner.UnloadedP99()
		var line strings.Builder
		fmt.Fprintf(&line, "%-45s best %3d:", c, st.Best)
		for _, n := range []int{26, 28, 30, 32, 33, 34, 36, 38} {
			worst, worstP := 10.0, 0.0
			res := make([]Result, *devSeeds)
			var jobs []func()
			for s := range *devSeeds {
				jobs = append(jobs, func() {
					sc := c.Scenario(uint64(s + 1))
					res[s] = Measure(sc, devModel()(sc, "static", NewStatic(n)), c.Band(), p99)
				})
			}
			parallel(jobs)
			for s, r := range res {
				worst = min(worst, r.Goodput/st.Static[s].Goodput)
				worstP = max(worstP, r.P99)
			}
			fmt.Fprintf(&line, " %d:%.2f/%.2f", n, worst, worstP)
		}
		fmt.Println(line.String())
	}
}

var devOracle = flag.String("dev.oracle", "", "TestDevOracle: comma-separated k")

func TestDevOracle(t *testing.T) {
	if *devOracle == "" {
		t.Skip()
	}
	cre := regexp.MustCompile(*devCells)
	cache := devStatic(devCellList(), *devSeeds)
	var ks []float64
	for _, s := range strings.Split(*devOracle, ",") {
		var k float64
		fmt.Sscan(s, &k)
		ks = append(ks, k)
	}
	for _, c := range Cells() {
		if !cre.MatchString(c.String()) || c.Start > 1 {
			continue
		}
		st := cache[c.String()]
		p99 := c.Partner.UnloadedP99()
		var line strings.Builder
		fmt.Fprintf(&line, "%-40s best %3d:", strings.TrimSuffix(c.String(), ", start C/5"), st.Best)
		for _, k := range ks {
			worst, worstP := 10.0, 0.0
			rej := 0
			res := make([]Result, *devSeeds)
			var jobs []func()
			for s := range *devSeeds {
				jobs = append(jobs, func() {
					sc := c.Scenario(uint64(s + 1))
					res[s] = Measure(sc, devModel()(sc, "oracle", NewOracle(sc, k)), c.Band(), p99)
				})
			}
			parallel(jobs)
			for s, r := range res {
				worst = min(worst, r.Goodput/st.Static[s].Goodput)
				worstP = max(worstP, r.P99)
				rej = max(rej, r.RejectedUnderload)
			}
			fmt.Fprintf(&line, "  %.2f: g %.2f p %.2f r %d", k, worst, worstP, rej)
		}
		fmt.Println(line.String())
	}
}

var devScan = flag.String("dev.scan", "", "TestDevScan: goal letter to scan for (f, g, c, r, p)")

// TestDevScan lists the runs of a contender that miss a goal.
func TestDevScan(t *testing.T) {
	if *devScan == "" {
		t.Skip()
	}
	cre := regexp.MustCompile(*devCells)
	cache := devStatic(devCellList(), *devSeeds)
	ct := devContender()
	type miss struct {
		cell string
		seed int
		r    Result
		g    float64
	}
	var mu sync.Mutex
	var out []miss
	var jobs []func()
	for _, c := range Cells() {
		if !cre.MatchString(c.String()) {
			continue
		}
		st := cache[c.String()]
		p99 := c.Partner.UnloadedP99()
		for s := range *devSeeds {
			jobs = append(jobs, func() {
				sc := c.Scenario(uint64(s + 1))
				r := Measure(sc, devModel()(sc, ct.Name, ct.New(sc)), c.Band(), p99)
				g := Check(r, st.Static[s])
				if strings.Contains(missed(g), *devScan) {
					mu.Lock()
					out = append(out, miss{c.String(), s + 1, r, r.Goodput / st.Static[s].Goodput})
					mu.Unlock()
				}
			})
		}
	}
	parallel(jobs)
	slices.SortFunc(out, func(a, b miss) int {
		if a.cell != b.cell {
			return strings.Compare(a.cell, b.cell)
		}
		return a.seed - b.seed
	})
	for _, m := range out {
		fmt.Printf("%-45s seed %2d: goodput %.2f p99 %.2f conv %v rejU %d floor %v\n", m.cell, m.seed, m.g, m.r.P99, m.r.Converge, m.r.RejectedUnderload, m.r.AtFloor)
	}
	fmt.Println(len(out), "runs")
}

var devExc = flag.Bool("dev.exc", false, "TestDevExc: how far the 1 s average leaves the band")

// TestDevExc prints, per cell, the highest and lowest 1 s average of the
// default's limit relative to the capacity in force, over the time the
// convergence goal looks at (overloaded, from Settle after a change), the
// worst seed and the median seed.
func TestDevExc(t *testing.T) {
	if !*devExc {
		t.Skip()
	}
	cre := regexp.MustCompile(*devCells)
	ct := devContender()
	for _, c := range Cells() {
		if !cre.MatchString(c.String()) {
			continue
		}
		hi := make([]float64, *devSeeds)
		lo := make([]float64, *devSeeds)
		var jobs []func()
		for s := range *devSeeds {
			jobs = append(jobs, func() {
				sc := c.Scenario(uint64(s + 1))
				run := devModel()(sc, ct.Name, ct.New(sc))
				avg := movingAverage(run.Limits, int(time.Second/sc.Trace))
				hi[s], lo[s] = 0, 10
				mean := sc.Partner.Mean()
				for k, l := range avg {
					tt := time.Duration(k) * sc.Trace
					seg := sc.segment(tt)
					if tt-sc.lastChange(tt) < Settle || !overloaded(seg, mean) {
						continue
					}
					r := l / float64(seg.Capacity)
					hi[s], lo[s] = max(hi[s], r), min(lo[s], r)
				}
			})
		}
		parallel(jobs)
		if hi[0] == 0 {
			continue
		}
		slices.Sort(hi)
		slices.Sort(lo)
		fmt.Printf("%-45s band %.2f  high worst %.2f median %.2f  low worst %.2f median %.2f\n", c, c.Band(), hi[len(hi)-1], hi[len(hi)/2], lo[0], lo[len(lo)/2])
	}
}

// devContender is the first contender -dev.only matches, else the first
// contender (the default).
func devContender() Contender {
	if *devOnly != "" {
		only := regexp.MustCompile(*devOnly)
		for _, c := range devContenders() {
			if only.MatchString(c.Name) {
				return c
			}
		}
	}
	return Contenders()[0]
}
