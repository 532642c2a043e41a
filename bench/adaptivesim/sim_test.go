package adaptivesim

import (
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"
)

var update = flag.Bool("update", false, "rewrite the Adaptive limits section of docs/benchmarks.md and the plots in docs/img")

// Command is how the published figures are produced.
const Command = "cd bench && go test ./adaptivesim -run TestSimulation -count=1 -v -update"

func runAll(t *testing.T, sc Scenario) ([]Run, []Result, Result) {
	var runs []Run
	var results []Result
	// Best static limit with hindsight: the best goodput over a sweep.
	var best Result
	bestN := 0
	for n := sweepStep; n <= 200; n += sweepStep {
		r := Measure(sc, Simulate(sc, "static", NewStatic(n)))
		if r.Goodput > best.Goodput {
			best, bestN = r, n
		}
	}
	for _, c := range AdaptiveContenders() {
		run := Simulate(sc, c.Name, NewAdaptive(c.Cfg, c.API))
		runs = append(runs, run)
		results = append(results, Measure(sc, run))
	}
	synctest.Test(t, func(t *testing.T) {
		run := Simulate(sc, "failsafe-go adaptivelimiter v0.9.8", NewFailsafe())
		runs = append(runs, run)
		results = append(results, Measure(sc, run))
	})
	for _, n := range []int{bestN, 5 * bestN} {
		name := fmt.Sprintf("static %d (best with hindsight)", n)
		if n != bestN {
			name = fmt.Sprintf("static %d (5x too high)", n)
		}
		run := Simulate(sc, name, NewStatic(n))
		runs = append(runs, run)
		results = append(results, Measure(sc, run))
	}
	return runs, results, best
}

func find(t *testing.T, results []Result, name string) Result {
	for _, r := range results {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no result named %q", name)
	return Result{}
}

// TestSimulation runs every limiter on DefaultScenario and checks the goals
// of the best algorithm (Capacity, the default): it converges within 5 s
// after the start and after each change of capacity, reaches at least 0.9x
// the goodput of the best static limit, keeps the steady-state p99 within
// 2x the base latency, and is at least as good as failsafe-go's
// adaptivelimiter on goodput and p99.
func TestSimulation(t *testing.T) {
	sc := DefaultScenario()
	runs, results, best := runAll(t, sc)
	table := Table(sc, results, best)
	t.Logf("\n%s", table)

	ours := find(t, results, "capacity")
	fs := find(t, results, "failsafe-go adaptivelimiter v0.9.8")
	for k, d := range ours.Converge {
		if d < 0 || d > 5*time.Second {
			t.Errorf("capacity: convergence %d took %v, want within 5 s", k, d)
		}
	}
	if g := ours.Goodput / best.Goodput; g < 0.9 {
		t.Errorf("capacity: goodput %.2fx the best static, want >= 0.9x", g)
	}
	if ours.P99 > 2 {
		t.Errorf("capacity: p99 %.2fx the base latency, want <= 2x", ours.P99)
	}
	if ours.Goodput < fs.Goodput || ours.P99 > fs.P99 {
		t.Errorf("capacity (goodput %.0f/s, p99 %.2fx) is not at least as good as failsafe-go (%.0f/s, %.2fx)",
			ours.Goodput, ours.P99, fs.Goodput, fs.P99)
	}

	if *update {
		docs := filepath.Join("..", "..", "docs")
		if err := comparisonPlots(sc, runs[:len(runs)-1], filepath.Join(docs, "img", "adaptive-limits.png")); err != nil {
			t.Fatal(err)
		}
		if err := guidePlot(sc, runs[0+3], filepath.Join(docs, "img", "adaptive-guide.png")); err != nil {
			t.Fatal(err)
		}
		section := Section(sc, table, Command, time.Now().UTC().Format("2006-01-02"))
		if err := UpdateSection(filepath.Join(docs, "benchmarks.md"), section); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSimulationIsDeterministic: two runs of the same contender on the same
// scenario produce the same trace.
func TestSimulationIsDeterministic(t *testing.T) {
	sc := DefaultScenario()
	c := AdaptiveContenders()[3]
	a := Simulate(sc, c.Name, NewAdaptive(c.Cfg, c.API))
	b := Simulate(sc, c.Name, NewAdaptive(c.Cfg, c.API))
	if fmt.Sprint(a.Limits) != fmt.Sprint(b.Limits) || len(a.Calls) != len(b.Calls) {
		t.Fatal("two runs differ")
	}
}

// TestSimulationAcrossSeeds reruns the goals on other arrivals and service
// times (seeds 1 to seedCount) for Capacity through the typed calls and
// through the plain interface: on every seed, goodput at least 0.9x the
// static limit that is best on seed 1, p99 within 2x, and at least as good
// as failsafe-go on both; and at most two of the seeds' convergences (three
// per seed) over 5 s, the band at C = 10 being ±1.5 permits.
func TestSimulationAcrossSeeds(t *testing.T) {
	slow := 0
	for seed := uint64(1); seed <= seedCount; seed++ {
		sc := DefaultScenario()
		sc.Seed = seed
		best := Measure(sc, Simulate(sc, "static", NewStatic(105)))
		var fs Result
		synctest.Test(t, func(t *testing.T) { fs = Measure(sc, Simulate(sc, "failsafe-go", NewFailsafe())) })
		for _, c := range AdaptiveContenders()[3:5] {
			r := Measure(sc, Simulate(sc, c.Name, NewAdaptive(c.Cfg, c.API)))
			t.Logf("seed %d, %s: converge %v, goodput %.2fx, p99 %.2fx (failsafe-go %.2fx, %.2fx)",
				seed, c.Name, r.Converge, r.Goodput/best.Goodput, r.P99, fs.Goodput/best.Goodput, fs.P99)
			if r.Goodput < 0.9*best.Goodput || r.P99 > 2 || r.Goodput < fs.Goodput || r.P99 > fs.P99 {
				t.Errorf("seed %d, %s: goodput %.2fx, p99 %.2fx miss the goals", seed, c.Name, r.Goodput/best.Goodput, r.P99)
			}
			for _, d := range r.Converge {
				if d < 0 || d > 5*time.Second {
					slow++
				}
			}
		}
	}
	if slow > 2 {
		t.Errorf("%d convergences took over 5 s, want at most 2", slow)
	}
}
