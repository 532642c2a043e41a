package adaptivesim

import (
	"fmt"
	"testing"
	"testing/synctest"
)

func runAll(t *testing.T, sc Scenario) ([]Run, []Result, Result) {
	var runs []Run
	var results []Result
	// Best static limit with hindsight: the best goodput over a sweep.
	var best Result
	bestN := 0
	for n := 10; n <= 200; n += 5 {
		r := Measure(sc, Simulate(sc, "static", NewStatic(n)))
		if r.Goodput > best.Goodput {
			best, bestN = r, n
		}
	}
	best.Name = fmt.Sprintf("static %d (best with hindsight)", bestN)
	bestRun := Simulate(sc, best.Name, NewStatic(bestN))
	for _, c := range AdaptiveContenders() {
		run := Simulate(sc, c.Name, NewAdaptive(c.Cfg, c.Typed))
		runs = append(runs, run)
		results = append(results, Measure(sc, run))
	}
	synctest.Test(t, func(t *testing.T) {
		run := Simulate(sc, "failsafe-go adaptivelimiter v0.9.8", NewFailsafe())
		runs = append(runs, run)
		results = append(results, Measure(sc, run))
	})
	runs = append(runs, bestRun)
	results = append(results, best)
	high := 5 * bestN
	run := Simulate(sc, fmt.Sprintf("static %d (5x too high)", high), NewStatic(high))
	runs = append(runs, run)
	results = append(results, Measure(sc, run))
	return runs, results, best
}

func TestSimulation(t *testing.T) {
	sc := DefaultScenario()
	_, results, best := runAll(t, sc)
	t.Logf("\n%s", Table(sc, results, best))
}
