package adaptivesim

import (
	"runtime"
	"slices"
	"sync"
	"time"
)

// Goals are the goals for one seed of one cell.
type Goals struct {
	Converge bool // within 5 s after every change, at loads at or above C
	Rejected bool // nothing rejected in steady state at loads below C
	Goodput  bool // at least 0.9× the best static limit
	P99      bool // at most 1.5× the unloaded p99 service time
	Floor    bool // never at the floor for more than 1 s
}

// All reports whether every goal is met.
func (g Goals) All() bool { return g.Converge && g.Rejected && g.Goodput && g.P99 && g.Floor }

// Check returns the goals that r meets, goodput measured against static.
func Check(r, static Result) Goals {
	conv := r.WorstConverge()
	return Goals{
		Converge: conv >= 0 && conv <= Settle,
		Rejected: r.RejectedUnderload == 0,
		Goodput:  r.Goodput >= 0.9*static.Goodput,
		P99:      r.P99 <= 1.5,
		Floor:    r.AtFloor <= time.Second,
	}
}

// CellResult is every contender's results on one cell, seed by seed.
type CellResult struct {
	Cell       Cell
	BestStatic int      // the static limit with the best mean goodput
	Static     []Result // BestStatic, per seed
	// Runs maps a contender's name to its results per seed, and Traces to
	// its run of the first seed.
	Runs   map[string][]Result
	Traces map[string]Run
}

// Options say how much of the matrix to run.
type Options struct {
	Seeds       int   // seeds 1 to Seeds
	StaticSeeds int   // seeds the static sweep runs on
	StaticGrid  []int // static limits swept; none: no static runs, BestStatic and Static stay empty
	// Bubble runs f inside a testing/synctest bubble (for the contenders
	// that read time.Now).
	Bubble func(f func())
	// Trace names the cells (Cell.String) whose run of seed 1 is kept,
	// limits only, for every contender.
	Trace map[string]bool
	// Model is the partner every run simulates: Simulate (the M/G/c queue
	// of the published matrix) when nil, or SimulatePS.
	Model func(sc Scenario, name string, lim Limiter) Run
}

// simulate runs lim on sc with o's partner model.
func (o Options) simulate(sc Scenario, name string, lim Limiter) Run {
	if o.Model != nil {
		return o.Model(sc, name, lim)
	}
	return Simulate(sc, name, lim)
}

// RunMatrix runs contenders on every cell and seed, on GOMAXPROCS
// goroutines. Each run is deterministic; the results do not depend on the
// order in which the runs are scheduled.
func RunMatrix(cells []Cell, contenders []Contender, o Options) []CellResult {
	out := make([]CellResult, len(cells))
	type job func()
	var jobs []job
	var mu sync.Mutex
	p99 := make([]time.Duration, len(cells))
	sweeps := make([][][]Result, len(cells)) // [cell][grid][seed]
	for i, c := range cells {
		out[i] = CellResult{Cell: c, Runs: map[string][]Result{}, Traces: map[string]Run{}}
		p99[i] = c.Partner.UnloadedP99()
		sweeps[i] = make([][]Result, len(o.StaticGrid))
		for g, n := range o.StaticGrid {
			sweeps[i][g] = make([]Result, o.StaticSeeds)
			for s := range o.StaticSeeds {
				jobs = append(jobs, func() {
					sc := c.Scenario(uint64(s + 1))
					sweeps[i][g][s] = Measure(sc, o.simulate(sc, "static", NewStatic(n)), c.Band(), p99[i])
				})
			}
		}
		for _, ct := range contenders {
			res := make([]Result, o.Seeds)
			out[i].Runs[ct.Name] = res
			for s := range o.Seeds {
				jobs = append(jobs, func() {
					sc := c.Scenario(uint64(s + 1))
					var run Run
					sim := func() { run = o.simulate(sc, ct.Name, ct.New(sc)) }
					if ct.Bubble {
						o.Bubble(sim)
					} else {
						sim()
					}
					res[s] = Measure(sc, run, c.Band(), p99[i])
					if s == 0 && o.Trace[c.String()] {
						mu.Lock()
						out[i].Traces[ct.Name] = Run{Name: run.Name, Limits: run.Limits}
						mu.Unlock()
					}
				})
			}
		}
	}
	parallel(jobs)
	if len(o.StaticGrid) == 0 {
		return out // no static sweep (TestMatrixRerun)
	}
	// The best static limit of each cell, then its run on every seed.
	jobs = nil
	for i, c := range cells {
		best, bestG := -1.0, 0
		for g := range o.StaticGrid {
			sum := 0.0
			for _, r := range sweeps[i][g] {
				sum += r.Goodput
			}
			if sum > best {
				best, bestG = sum, g
			}
		}
		n := o.StaticGrid[bestG]
		out[i].BestStatic = n
		out[i].Static = make([]Result, o.Seeds)
		for s := range o.Seeds {
			jobs = append(jobs, func() {
				sc := c.Scenario(uint64(s + 1))
				run := o.simulate(sc, "static", NewStatic(n))
				out[i].Static[s] = Measure(sc, run, c.Band(), p99[i])
				if s == 0 && o.Trace[c.String()] {
					mu.Lock()
					out[i].Traces["static"] = Run{Name: run.Name, Limits: run.Limits}
					mu.Unlock()
				}
			})
		}
	}
	parallel(jobs)
	return out
}

// parallel runs jobs on GOMAXPROCS goroutines.
func parallel[J ~func()](jobs []J) {
	var wg sync.WaitGroup
	next := make(chan J)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for j := range next {
				j()
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
}

// Summary is one contender on one cell over its seeds: the worst seed
// and the median of each figure.
type Summary struct {
	Seeds, Met                    int // seeds, and seeds meeting every goal
	ConvergeWorst, ConvergeMedian time.Duration
	GoodputWorst, GoodputMedian   float64 // relative to the best static limit
	P99Worst, P99Median           float64 // relative to the unloaded p99
	RejectedWorst                 int
	FloorWorst                    time.Duration
	Goals                         Goals // every seed meets this goal
}

// Summarize sums up a contender's results on a cell.
func (cr CellResult) Summarize(name string) Summary {
	rs := cr.Runs[name]
	if name == "static" {
		rs = cr.Static
	}
	s := Summary{Seeds: len(rs), Goals: Goals{true, true, true, true, true}}
	var conv []time.Duration
	var good, p99 []float64
	for k, r := range rs {
		g := Check(r, cr.Static[k])
		if g.All() {
			s.Met++
		}
		s.Goals.Converge = s.Goals.Converge && g.Converge
		s.Goals.Rejected = s.Goals.Rejected && g.Rejected
		s.Goals.Goodput = s.Goals.Goodput && g.Goodput
		s.Goals.P99 = s.Goals.P99 && g.P99
		s.Goals.Floor = s.Goals.Floor && g.Floor
		c := r.WorstConverge()
		if c < 0 {
			c = time.Duration(1 << 62) // never: sorts last
		}
		conv = append(conv, c)
		good = append(good, r.Goodput/cr.Static[k].Goodput)
		p99 = append(p99, r.P99)
		s.RejectedWorst = max(s.RejectedWorst, r.RejectedUnderload)
		s.FloorWorst = max(s.FloorWorst, r.AtFloor)
	}
	slices.Sort(conv)
	slices.Sort(good)
	slices.Sort(p99)
	s.ConvergeWorst, s.ConvergeMedian = conv[len(conv)-1], conv[len(conv)/2]
	s.GoodputWorst, s.GoodputMedian = good[0], good[len(good)/2]
	s.P99Worst, s.P99Median = p99[len(p99)-1], p99[len(p99)/2]
	return s
}
