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
// nothing): about 2× at seed 1 (it was above 2 when a document took one
// permit of its partner's bulkhead: each batch partner's documents now hold
// at most 20 permits of the hub, not 20 documents, about 52 permits).
func TestQuick(t *testing.T) {
	sw := RunSweep(Quick(), []uint64{1}, bubble(t), NoBurst, Budget, NoBudget)
	t.Logf("\n%s\n%s", sw.Table(), sw.WeightTable())
	for _, m := range sw.Misses() {
		t.Error(m)
	}
	if q := sw.Ratio(NoBudget, 0); q < 1.5 {
		t.Errorf("without a budget the interactive p99 is only %.2f× the baseline: the burst does not load the hub", q)
	}
	for m, rs := range sw.Results {
		if r := rs[0]; r.Undecided > 0 {
			t.Errorf("%v: %d calls never decided", m, r.Undecided)
		}
	}
}

// TestQuickMixed runs the mixed scenario on Quick's times: with the batch
// partners' bulkheads of 20, their interactive calls wait behind their
// documents in those bulkheads (the p99 goal is missed, as the docs say);
// with bulkheads sized for the documents (MixedSized), the goals are met.
func TestQuickMixed(t *testing.T) {
	q := Quick()
	quick := func(sc Scenario) Scenario {
		sc.Duration, sc.BurstAt, sc.Window, sc.Settle, sc.BatchDocs = q.Duration, q.BurstAt, q.Window, q.Settle, q.BatchDocs
		return sc
	}
	mixed := RunSweep(quick(MixedScenario()), []uint64{1}, bubble(t), NoBurst, Budget)
	sized := RunSweep(quick(MixedSized()), []uint64{1}, bubble(t), NoBurst, Budget)
	t.Logf("\n%s\n%s", mixed.Table(), sized.Table())
	if r := mixed.Ratio(Budget, 0); r <= GoalP99Ratio {
		t.Errorf("mixed, bulkheads of 20: interactive p99 %.2f× the baseline; the docs say the partners' own queues raise it above %.1f×", r, GoalP99Ratio)
	}
	for _, m := range sized.Misses() {
		t.Errorf("mixed, sized bulkheads: %s", m)
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

// saved is the last full sweep of the three scenarios.
type saved struct{ Main, Mixed, MixedSized Sweep }

// TestSweep runs the full scenario, the mixed one and the mixed one with
// sized bulkheads over FullSeeds seeds (with -full) and saves them for
// TestSweepDocs. The goals are checked on the main scenario and the sized
// mixed one; the mixed one with bulkheads of 20 misses the p99 goal by
// design (its partners' own queues, see Section), which is logged.
func TestSweep(t *testing.T) {
	if !*full {
		t.Skip("the full sweep runs with -full (" + Command + ")")
	}
	var seeds []uint64
	for s := range uint64(FullSeeds) {
		seeds = append(seeds, s+1)
	}
	sv := saved{
		Main:       RunSweep(Default(), seeds, bubble(t)),
		Mixed:      RunSweep(MixedScenario(), seeds, bubble(t)),
		MixedSized: RunSweep(MixedSized(), seeds, bubble(t), NoBurst, Budget, OneClass),
	}
	for _, sw := range []Sweep{sv.Main, sv.Mixed, sv.MixedSized} {
		t.Logf("\n%s\n%s", sw.Table(), sw.WeightTable())
	}
	for _, m := range sv.Mixed.Misses() {
		t.Logf("mixed, bulkheads of %d: %s", sv.Mixed.Scenario.PartnerCap, m)
	}
	for _, m := range append(sv.Main.Misses(), sv.MixedSized.Misses()...) {
		t.Error(m)
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
	section := Section(sv.Main, sv.Mixed, sv.MixedSized)
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
