package adaptivesim

import (
	"flag"
	"fmt"
	"testing"
	"testing/synctest"
)

var (
	update = flag.Bool("update", false, "rewrite the Adaptive limits section of docs/benchmarks.md and the plots in docs/img")
	full   = flag.Bool("full", false, "run the whole matrix with FullSeeds seeds")
	quick  = flag.Bool("quick", false, "run TestQuick, the overload cells on 5 seeds")
)

// FullSeeds is the seed count of the published matrix.
const FullSeeds = 20

// Command is how the published figures are produced.
const Command = "make -f bench/adaptivesim/adaptivesim.mk adaptive-matrix"

func bubble(t *testing.T) func(func()) {
	return func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }
}

func names(cs []Contender) []string {
	var ns []string
	for _, c := range cs {
		ns = append(ns, c.Name)
	}
	return append(ns, "static")
}

// TestMatrix runs every contender on the whole matrix and prints the
// tables; -full runs FullSeeds seeds, -update also writes the docs.
func TestMatrix(t *testing.T) {
	if !*full {
		t.Skip("the whole matrix runs with -full (make -f bench/adaptivesim/adaptivesim.mk adaptive-matrix)")
	}
	cs := Contenders()
	res := RunMatrix(Cells(), cs, Options{Seeds: FullSeeds, StaticSeeds: 3, StaticGrid: staticGrid(3), Bubble: bubble(t), KeepTraces: true})
	t.Logf("\n%s", SummaryTable(res, names(cs)))
	t.Logf("\n%s", CellTable(res, DefaultName))
	t.Logf("\n%s", ComparisonTable(res, names(cs)))
}

// staticGrid is the static limits swept for the best one, every step.
func staticGrid(step int) []int {
	var g []int
	for n := step; n <= 2*NominalC; n += step {
		g = append(g, n)
	}
	return append(g, 3*NominalC, 5*NominalC)
}

// TestSimulationIsDeterministic: two runs of the same contender on the same
// scenario produce the same trace.
func TestSimulationIsDeterministic(t *testing.T) {
	sc := Cells()[20].Scenario(3)
	c := Contenders()[0]
	a := Simulate(sc, c.Name, c.New(sc.Initial))
	b := Simulate(sc, c.Name, c.New(sc.Initial))
	if fmt.Sprint(a.Limits) != fmt.Sprint(b.Limits) || len(a.Calls) != len(b.Calls) {
		t.Fatal("two runs differ")
	}
}

// TestQuick is a development aid: a few cells on a few seeds.
func TestQuick(t *testing.T) {
	if !*quick {
		t.Skip("runs with -quick")
	}
	cs := Contenders()
	var cells []Cell
	for _, c := range Cells() {
		if c.Load == 1.5 && (c.Shape == "step" || c.Shape == "steady") {
			cells = append(cells, c)
		}
	}
	res := RunMatrix(cells, cs, Options{Seeds: 5, StaticSeeds: 2, StaticGrid: staticGrid(6), Bubble: bubble(t)})
	t.Logf("\n%s", SummaryTable(res, names(cs)))
	t.Logf("\n%s", CellTable(res, DefaultName))
	t.Logf("\n%s", ComparisonTable(res, names(cs)))
}
