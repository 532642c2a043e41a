package main

import (
	"bytes"
	"flag"
	"image/png"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func runMonthEndInBubble(t *testing.T, o monthEndOptions) []*monthEndRun {
	t.Helper()
	var runs []*monthEndRun
	synctest.Test(t, func(t *testing.T) {
		calls := monthEndCalls(o)
		for _, withBudget := range []bool{true, false} {
			r, err := runMonthEnd(withBudget, o, calls, nil)
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, r)
		}
	})
	return runs
}

var (
	defaultActOnce sync.Once
	defaultAct     []*monthEndRun
)

func defaultMonthEndRuns(t *testing.T) []*monthEndRun {
	t.Helper()
	defaultActOnce.Do(func() { defaultAct = runMonthEndInBubble(t, defaultMonthEnd()) })
	if defaultAct == nil {
		t.Fatal("the month-end act failed in an earlier test")
	}
	return defaultAct
}

func TestMonthEndBudgetKeepsInteractiveLatencyAndUsesTheHub(t *testing.T) {
	runs := defaultMonthEndRuns(t)
	budget, none := runs[0], runs[1]
	var out bytes.Buffer
	printMonthEnd(&out, runs)
	t.Log("\n" + out.String())
	if r := budget.p99Ratio(); r > 1.2 {
		t.Errorf("with the budget the interactive p99 during the burst is %.2fx its value before, want <= 1.2x", r)
	}
	if r := none.p99Ratio(); r < 2 {
		t.Errorf("without a budget the interactive p99 during the burst is %.2fx its value before: the burst does not show what the budget prevents", r)
	}
	if u, n := budget.busyUtilisation(); n == 0 || u < 0.9 {
		t.Errorf("with the budget the hub's utilisation while calls waited is %.2f over %d samples, want >= 0.9", u, n)
	}
	if budget.rejected.Load() != 0 {
		t.Errorf("with the budget %d interactive calls were rejected", budget.rejected.Load())
	}
	o := budget.opts
	for _, r := range runs {
		if got := r.docsDone.Load() + r.docsRejected.Load(); got != int64(o.batch*o.docs) {
			t.Errorf("%s: %d documents decided, want %d", r.name(), got, o.batch*o.docs)
		}
		if max := time.Duration(r.batchEnd.Load()); max <= o.burstAt || max >= o.duration+o.docWait {
			t.Errorf("%s: the last document ended at %v", r.name(), max)
		}
	}
	if budget.docsRejected.Load() != 0 {
		t.Errorf("with the budget %d documents were rejected: batch work starved", budget.docsRejected.Load())
	}
	if w := budget.hubWait[0].quantile(0.99); w > 100*time.Millisecond {
		t.Errorf("with the budget interactive calls waited up to %v (p99) in the hub", w)
	}
}

// monthEndChart, when set, is where TestMonthEndChartIsAPNGWithBothRuns
// also writes the chart of the virtual-time run: the README's
// docs/img/edihub-month-end.png is made with
//
//	cd examples/edihub && go test -run TestMonthEndChartIsAPNGWithBothRuns -month-end-chart ../../docs/img/edihub-month-end.png
var monthEndChart = flag.String("month-end-chart", "", "write the month-end chart of the virtual-time run to this PNG file")

func TestMonthEndChartIsAPNGWithBothRuns(t *testing.T) {
	runs := defaultMonthEndRuns(t)
	var buf bytes.Buffer
	if err := drawMonthEnd(&buf, runs); err != nil {
		t.Fatal(err)
	}
	if *monthEndChart != "" {
		if err := os.WriteFile(*monthEndChart, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	// Some pixels of each class's colour are drawn.
	seen := map[[3]uint32]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}]++
		}
	}
	for name, c := range map[string][3]uint32{"interactive": {31, 119, 180}, "batch": {255, 127, 14}} {
		if seen[c] < 100 {
			t.Errorf("the chart has %d pixels of the %s colour", seen[c], name)
		}
	}
}

func TestMonthEndTableNamesBothRuns(t *testing.T) {
	var out bytes.Buffer
	printMonthEnd(&out, defaultMonthEndRuns(t))
	for _, want := range []string{"budget", "no budget (today)", "interactive p99 during the burst", "hub utilisation while calls wait", "wait in the hub p99, batch"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
}

// The real thing, small: the act in real time with its budget exported on
// a /metrics server on 127.0.0.1, whose scrape at the end counts what the
// run counted.
func TestMonthEndBudgetSeriesAreScrapedFromMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: about 2 s")
	}
	m, err := startMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	o := defaultMonthEnd()
	o.interactive, o.batch, o.size = 20, 4, 60
	o.duration, o.burstAt, o.docs = time.Second, 300*time.Millisecond, 10
	r, err := runMonthEnd(true, o, monthEndCalls(o), m)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := printMetrics(&out, m, "walmart"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`bulkhead_budget_calls_total{budget="hub",class="batch",kind="permitted",run="month-end"} ` + strconv.FormatInt(r.docsDone.Load(), 10),
		`bulkhead_budget_calls_total{budget="hub",class="interactive",kind="permitted",run="month-end"} ` + strconv.FormatInt(r.interactive.Load()-r.rejected.Load(), 10),
		`bulkhead_budget_wait_duration_seconds_count{budget="hub",class="batch",outcome="granted",run="month-end"} ` + strconv.FormatInt(r.docsDone.Load(), 10),
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the scrape lacks %s:\n%s", w, out.String())
		}
	}
}

func TestMonthEndTableNotesACPUStall(t *testing.T) {
	o := defaultMonthEnd()
	r := newMonthEndRun(true, o)
	r.maxStall = time.Second
	var out bytes.Buffer
	printMonthEnd(&out, []*monthEndRun{r})
	if !strings.Contains(out.String(), "note: the month-end run budget was starved of CPU for up to 1s") {
		t.Errorf("no stall note:\n%s", out.String())
	}
	if strings.Contains(printed(t, defaultMonthEndRuns(t)), "starved") {
		t.Error("a run in virtual time reported a CPU stall")
	}
}

func printed(t *testing.T, runs []*monthEndRun) string {
	t.Helper()
	var out bytes.Buffer
	printMonthEnd(&out, runs)
	return out.String()
}
