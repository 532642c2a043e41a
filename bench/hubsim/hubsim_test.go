package hubsim

import (
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

var (
	full   = flag.Bool("full", false, "TestSweep: run the full scenario over FullSeeds seeds and save it to "+resultsFile)
	update = flag.Bool("update", false, "TestSweepDocs: rewrite the hub budget section of docs/benchmarks.md from "+resultsFile)
)

// FullSeeds is the seed count of the published sweep.
const FullSeeds = 8

// resultsFile holds the last full sweep, from which the docs are made.
const resultsFile = "testdata/sweep.json"

func bubble(t *testing.T) func(func()) {
	return func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }
}

// TestQuick runs the Quick scenario (the full hub and loads, a burst of a
// few seconds) in every mode and checks the goals with the budget, and that
// without it the interactive calls do suffer (else the scenario would prove
// nothing).
func TestQuick(t *testing.T) {
	sw := RunSweep(Quick(), []uint64{1}, bubble(t), NoBurst, Budget, NoBudget)
	t.Logf("\n%s\n%s", sw.Table(), sw.WeightTable())
	for _, m := range sw.Misses() {
		t.Error(m)
	}
	if q := sw.Ratio(NoBudget, 0); q < 2 {
		t.Errorf("without a budget the interactive p99 is only %.2f× the baseline: the burst does not load the hub", q)
	}
	for m, rs := range sw.Results {
		if r := rs[0]; r.Undecided > 0 {
			t.Errorf("%v: %d calls never decided", m, r.Undecided)
		}
	}
}

// TestRunsAreDeterministic runs the same seed twice in each mode with a
// budget: the results must be equal, field by field.
func TestRunsAreDeterministic(t *testing.T) {
	sc := Quick()
	sc.Duration, sc.BurstAt, sc.Window, sc.Settle, sc.BatchDocs = time.Second, 250*time.Millisecond, 500*time.Millisecond, 200*time.Millisecond, 20
	for _, m := range []Mode{Budget, NoBudget} {
		a, b := Run(sc, m, 7, bubble(t)), Run(sc, m, 7, bubble(t))
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%v: two runs of seed 7 differ:\n%+v\n%+v", m, a, b)
		}
	}
}

// saved is the last full sweep of both scenarios.
type saved struct{ Main, Mixed Sweep }

// TestSweep runs the full scenario and the mixed one over FullSeeds seeds
// (with -full) and saves them for TestSweepDocs.
func TestSweep(t *testing.T) {
	if !*full {
		t.Skip("the full sweep runs with -full (" + Command + ")")
	}
	var seeds []uint64
	for s := range uint64(FullSeeds) {
		seeds = append(seeds, s+1)
	}
	sv := saved{Main: RunSweep(Default(), seeds, bubble(t)), Mixed: RunSweep(MixedScenario(), seeds, bubble(t))}
	for _, sw := range []Sweep{sv.Main, sv.Mixed} {
		t.Logf("\n%s\n%s", sw.Table(), sw.WeightTable())
		for _, m := range sw.Misses() {
			t.Error(m)
		}
	}
	b, err := json.MarshalIndent(sv, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(resultsFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSweepDocs writes the section of docs/benchmarks.md from the saved
// sweep (with -update); without it, it checks that the section is the one
// the saved sweep makes.
func TestSweepDocs(t *testing.T) {
	b, err := os.ReadFile(resultsFile)
	if os.IsNotExist(err) && !*update {
		t.Skip("no saved sweep: " + Command)
	}
	if err != nil {
		t.Fatal(err)
	}
	var sv saved
	if err := json.Unmarshal(b, &sv); err != nil {
		t.Fatal(err)
	}
	section := Section(sv.Main, sv.Mixed)
	const docs = "../../docs/benchmarks.md"
	if *update {
		if err := UpdateDocs(docs, section); err != nil {
			t.Fatal(err)
		}
		return
	}
	text, err := os.ReadFile(docs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), section) {
		t.Errorf("docs/benchmarks.md's %q section is not the one TestSweepDocs -update makes from %s: run %s", Heading, resultsFile, Command)
	}
}
