package adaptivesim

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

var (
	full   = flag.Bool("full", false, "TestMatrix: run the whole matrix with FullSeeds seeds and save it to "+resultsFile)
	rerun  = flag.String("rerun", "", "TestMatrixRerun: contenders matching this regexp, run again on the whole matrix and merged into "+resultsFile)
	update = flag.Bool("update", false, "TestMatrixDocs: rewrite the Adaptive limits section of docs/benchmarks.md and its plots from "+resultsFile)
)

// FullSeeds is the seed count of the published matrix.
const FullSeeds = 20

// resultsFile holds the last full matrix, from which the docs are made.
const resultsFile = "testdata/matrix.json"

// traced are the cells whose seed-1 runs the plots show.
var traced = []string{"σ 0.3, load 1.5×, step, start C/5", "σ 0.3, load 1.5×, step, start 5×C"}

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

// staticGrid is the static limits swept for the best one, every step.
func staticGrid(step int) []int {
	var g []int
	for n := step; n <= 2*NominalC; n += step {
		g = append(g, n)
	}
	return append(g, 3*NominalC, 5*NominalC)
}

// TestMatrix runs every contender on the whole matrix, FullSeeds seeds per
// cell, prints the tables and saves them for TestMatrixDocs.
func TestMatrix(t *testing.T) {
	if !*full {
		t.Skip("the whole matrix runs with -full (" + Command + ")")
	}
	cs := Contenders()
	trace := tracedSet()
	start := time.Now()
	res := RunMatrix(Cells(), cs, Options{Seeds: FullSeeds, StaticSeeds: 2, StaticGrid: staticGrid(3), Bubble: bubble(t), Trace: trace})
	m := Matrix{Date: time.Now().UTC().Format("2006-01-02"), Seeds: FullSeeds, Names: names(cs), Duration: time.Since(start).Round(time.Second), Results: res}
	t.Logf("\n%s", SummaryTable(res, m.Names))
	t.Logf("\n%s", CellTable(res, DefaultName))
	writeSavedMatrix(t, m)
}

// readSavedMatrix reads the matrix TestMatrix saved.
func readSavedMatrix(t *testing.T) Matrix {
	t.Helper()
	b, err := os.ReadFile(resultsFile)
	if err != nil {
		t.Fatal(err)
	}
	var m Matrix
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// writeSavedMatrix saves m for TestMatrixRerun and TestMatrixDocs.
func writeSavedMatrix(t *testing.T, m Matrix) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(resultsFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// tracedSet is the cells (traced) whose seed-1 limit traces a run keeps.
func tracedSet() map[string]bool {
	trace := map[string]bool{}
	for _, c := range traced {
		trace[c] = true
	}
	return trace
}

// TestMatrixRerun runs the contenders matching -rerun again on the whole
// matrix (FullSeeds seeds, the saved cells' best static limits kept) and
// replaces their results and traces in the saved matrix (a contender new
// since the full run is added, in the order of Contenders): after a change
// that only those contenders see (the default algorithm), the saved matrix
// is then what a full run gives, since every run is deterministic and the
// other contenders and the static sweep do not depend on it, in a quarter
// of the time. Date and Duration stay those of the full run.
func TestMatrixRerun(t *testing.T) {
	if *rerun == "" {
		t.Skip("reruns contenders with -rerun REGEXP, after TestMatrix -full")
	}
	m := readSavedMatrix(t)
	re := regexp.MustCompile(*rerun)
	var cs []Contender
	after := "" // the last saved contender before c, in Contenders' order
	for _, c := range Contenders() {
		if re.MatchString(c.Name) {
			cs = append(cs, c)
			if !slices.Contains(m.Names, c.Name) {
				// a new contender: added to the saved matrix after the
				// one it follows in Contenders
				at := 0
				if after != "" {
					at = slices.Index(m.Names, after) + 1
				}
				m.Names = slices.Insert(m.Names, at, c.Name)
			}
		}
		if slices.Contains(m.Names, c.Name) {
			after = c.Name
		}
	}
	if len(cs) == 0 {
		t.Fatalf("no contender matches %q", *rerun)
	}
	cells := make([]Cell, len(m.Results))
	trace := tracedSet()
	for i, r := range m.Results {
		cells[i] = r.Cell
	}
	res := RunMatrix(cells, cs, Options{Seeds: m.Seeds, Bubble: bubble(t), Trace: trace})
	for i, r := range res {
		for _, c := range cs {
			m.Results[i].Runs[c.Name] = r.Runs[c.Name]
			if tr, ok := r.Traces[c.Name]; ok {
				if m.Results[i].Traces == nil {
					m.Results[i].Traces = map[string]Run{}
				}
				m.Results[i].Traces[c.Name] = tr
			}
		}
	}
	t.Logf("\n%s", SummaryTable(m.Results, m.Names))
	writeSavedMatrix(t, m)
}

// TestMatrixDocs writes the docs from the saved matrix (with -update).
func TestMatrixDocs(t *testing.T) {
	if !*update {
		t.Skip("writes the docs with -update, after TestMatrix -full")
	}
	m := readSavedMatrix(t)
	docs := filepath.Join("..", "..", "docs")
	if err := writePlots(m, filepath.Join(docs, "img")); err != nil {
		t.Fatal(err)
	}
	if err := UpdateSection(filepath.Join(docs, "benchmarks.md"), Section(m)); err != nil {
		t.Fatal(err)
	}
}

// TestSimulationIsDeterministic: two runs of the same contender on the same
// scenario produce the same trace.
func TestSimulationIsDeterministic(t *testing.T) {
	sc := Cells()[20].Scenario(3)
	c := Contenders()[0]
	a := Simulate(sc, c.Name, c.New(sc))
	b := Simulate(sc, c.Name, c.New(sc))
	if fmt.Sprint(a.Limits) != fmt.Sprint(b.Limits) || len(a.Calls) != len(b.Calls) {
		t.Fatal("two runs differ")
	}
}
