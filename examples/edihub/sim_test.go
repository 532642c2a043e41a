package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// shortOptions is a 2-second simulation of 30 partners: it runs over
// in-memory pipes in synctest's virtual time (real sockets cannot be used
// in a bubble), so it takes about a second of real time.
func shortOptions() options {
	o := defaultOptions()
	o.partners = 30
	o.duration = 2 * time.Second
	o.slowAfter = 500 * time.Millisecond
	return o
}

// shortRuns memoizes simulateInBubble(t, m, shortOptions()), its progress
// bar written to a buffer: the tests that only read a run's results, or its
// progress bar, share one run per mode.
var shortRuns sync.Map // mode name -> *shortResult

type shortResult struct {
	r        *result
	progress string // what the run's progress bar printed
}

func shortRun(t *testing.T, m mode) *result { return memoShortRun(t, m).r }

func memoShortRun(t *testing.T, m mode) *shortResult {
	t.Helper()
	if r, ok := shortRuns.Load(m.name); ok {
		return r.(*shortResult)
	}
	o := shortOptions()
	var progress bytes.Buffer
	o.progress = &progress
	r := &shortResult{r: simulateInBubble(t, m, o)}
	r.progress = progress.String()
	shortRuns.Store(m.name, r)
	return r
}

// simulateInBubble runs one simulation, partner servers and hub alike, in a
// synctest bubble over in-memory pipes. The bubble ends only when every
// goroutine of the run has ended: servers, connections and workers.
func simulateInBubble(t *testing.T, m mode, o options) *result {
	t.Helper()
	var res *result
	synctest.Test(t, func(t *testing.T) {
		ps := catalog(o.partners, o.seed, o.healthyRate)
		nw := newPipes()
		servers, err := startPartners(nw, ps, o.seed)
		if err != nil {
			t.Fatal(err)
		}
		defer stopPartners(servers)
		r, err := simulate(m, ps, servers, nw, o)
		if err != nil {
			t.Fatalf("simulate(%v): %v", m, err)
		}
		res = r
	})
	return res
}

func TestSlowPartnerRejectionsDoNotSpillOverToHealthyPartners(t *testing.T) {
	for _, m := range []mode{transportMode, poolMode} {
		t.Run(m.String(), func(t *testing.T) {
			r := shortRun(t, m)
			t.Logf("walmart: %d permitted, %d queued, %d rejected; healthy: %d permitted, %d queued, %d rejected",
				r.walmart.permitted.Load(), r.walmart.queued.Load(), r.walmart.rejected.Load(),
				r.healthy.permitted.Load(), r.healthy.queued.Load(), r.healthy.rejected.Load())
			if got := r.walmart.rejected.Load(); got == 0 {
				t.Errorf("walmart rejected nothing after slowing down 10x; its bulkhead did not fill")
			}
			if got := r.healthy.rejected.Load(); got != 0 {
				t.Errorf("healthy partners had %d rejections; want 0", got)
			}
			if r.healthy.permitted.Load() < 10*r.walmart.permitted.Load() {
				t.Errorf("healthy partners permitted %d calls, walmart %d: healthy traffic did not flow",
					r.healthy.permitted.Load(), r.walmart.permitted.Load())
			}
			hp99, wp99 := r.healthy.latency.quantile(0.99), r.walmart.latency.quantile(0.99)
			if hp99 >= wp99 || hp99 > 500*time.Millisecond {
				t.Errorf("p99: healthy %v, walmart %v; want healthy well below walmart and under 500ms", hp99, wp99)
			}
		})
	}
}

func TestSlowPartnerRejectsOnlyAfterItSlowsDown(t *testing.T) {
	o := shortOptions()
	r := shortRun(t, transportMode)
	for i := range r.slowT.rejected {
		if at := time.Duration(i) * o.bin; at < o.slowAfter && r.slowT.rejected[i].Load() != 0 {
			t.Errorf("walmart rejected %d calls at %v, before it slowed down at %v", r.slowT.rejected[i].Load(), at, o.slowAfter)
		}
	}
}

func TestWaitingDocumentsCostNoGoroutine(t *testing.T) {
	for _, m := range []mode{transportMode, poolMode} {
		t.Run(m.String(), func(t *testing.T) {
			r := shortRun(t, m)
			// The probe left batches of 1000 documents waiting: a goroutine each
			// would read 1.00.
			if r.pending.goroutines > 0.01 {
				t.Errorf("a waiting document costs %.3f goroutines; want 0", r.pending.goroutines)
			}
			if r.pending.heap <= 0 || r.pending.heap > 4096 {
				t.Errorf("a waiting document costs %.0f bytes of heap; want a small record (0, 4096]", r.pending.heap)
			}
			if r.walmart.queued.Load() == 0 {
				t.Errorf("walmart queued nothing: the run did not exercise waiting")
			}
		})
	}
}

func TestProgressBarShowsTheSlowdown(t *testing.T) {
	out := memoShortRun(t, transportMode).progress
	for _, want := range []string{"walmart healthy", "walmart SLOW x10", "[##############################]"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunPrintsTableAndWritesChart(t *testing.T) {
	chart := filepath.Join(t.TempDir(), "hub.png")
	var out, progress bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		err := runOn(newPipes(), []string{"-partners", "20", "-rate", "400", "-duration", "1s", "-slow-after", "300ms", "-quiet", "-chart", chart, "-metrics", ""}, &out, &progress)
		if err != nil {
			t.Fatal(err)
		}
	})
	monthEndChart := strings.TrimSuffix(chart, ".png") + "-month-end.png"
	for _, want := range []string{"bulkheadhttp", "goroutine pool", "walmart", "healthy (19)", "p99", "goroutines (peak)", "pending goroutines", "pending heap", "chart: " + chart,
		"Month-end at the hub", "no budget (today)", "interactive p99 during the burst", "month-end chart: " + monthEndChart} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "starved") {
		t.Errorf("a run in virtual time reported a CPU stall:\n%s", out.String())
	}
	if progress.Len() != 0 {
		t.Errorf("-quiet still printed progress: %q", progress.String())
	}
	f, err := os.Open(chart)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("chart is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != chartW || b.Dy() != chartH {
		t.Errorf("chart is %v; want %dx%d", b, chartW, chartH)
	}
	data, err := os.ReadFile(monthEndChart)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(data)); err != nil {
		t.Errorf("the month-end chart is not a PNG: %v", err)
	}
}

// The real thing, once and small: partner servers on 127.0.0.1, real time.
func TestRunOverLoopbackHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: about 3 s")
	}
	var out, progress bytes.Buffer
	err := run([]string{"-partners", "10", "-rate", "200", "-duration", "1s", "-slow-after", "300ms", "-quiet", "-chart", "", "-metrics", "127.0.0.1:0", "-month-end=false"}, &out, &progress)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"EDI hub over loopback HTTP: 10 partner servers", "bulkheadhttp", "goroutine pool", "pending goroutines"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(progress.String(), "serving the bulkheads' metrics on http://127.0.0.1:") {
		t.Errorf("the /metrics URL is not announced:\n%s", progress.String())
	}
	// The lines of the final scrape of /metrics, walmart's, for both runs:
	// calls were timed, at most one per granted wait (a permit the drain
	// withdrew before its request was sent is given back unused).
	counts := map[string]string{}
	for line := range strings.Lines(out.String()) {
		line = strings.TrimSpace(line)
		for _, metric := range []string{"bulkhead_call_duration_seconds_count", "bulkhead_wait_duration_seconds_count"} {
			for _, run := range []string{"bulkheadhttp", "goroutine pool"} {
				prefix := metric + `{name="walmart",`
				if strings.HasPrefix(line, prefix) && strings.Contains(line, `run="`+run+`"`) {
					counts[metric+" "+run] = line[strings.LastIndex(line, " ")+1:]
				}
			}
		}
	}
	for _, run := range []string{"bulkheadhttp", "goroutine pool"} {
		calls, _ := strconv.Atoi(counts["bulkhead_call_duration_seconds_count "+run])
		waits, _ := strconv.Atoi(counts["bulkhead_wait_duration_seconds_count "+run])
		if calls == 0 || calls > waits {
			t.Errorf("%s: walmart's timed calls %d, granted waits %d; want 0 < calls <= waits:\n%s", run, calls, waits, out.String())
		}
	}
}

func TestReportNotesACPUStall(t *testing.T) {
	o := shortOptions()
	r := &result{mode: transportMode, opts: o, walmart: &class{}, healthy: &class{}, maxStall: 2 * time.Second}
	var out bytes.Buffer
	printReport(&out, catalog(3, 1, 100), []*result{r})
	if !strings.Contains(out.String(), "starved of CPU for up to 2s") {
		t.Errorf("report lacks the stall note:\n%s", out.String())
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-partners", "1"}, "partners must be >= 2"},
		{[]string{"-slow-after", "9s", "-duration", "5s"}, "slow-after must be in [0, duration)"},
		{[]string{"-slow-by", "0.5"}, "slow-by must be >= 1"},
		{[]string{"-nope"}, "flag provided but not defined"},
		{[]string{"-metrics", "127.0.0.1:99999"}, "-metrics 127.0.0.1:99999"},
	} {
		var out, errOut bytes.Buffer
		err := run(tc.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v; want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestRunHelpPrintsUsageWithoutError(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"-h"}, &out, &errOut); err != nil {
		t.Fatalf("run(-h) = %v; want nil", err)
	}
	if !strings.Contains(errOut.String(), "-partners") {
		t.Errorf("usage lacks -partners:\n%s", errOut.String())
	}
}

func TestCatalogIsDeterministicAndKeepsHealthyPartnersBelowTheirPermits(t *testing.T) {
	a, b := catalog(500, 7, 6000), catalog(500, 7, 6000)
	if a[0].name != "walmart" || !a[0].slow {
		t.Fatalf("partner 0 = %+v; want walmart, the slow one", a[0])
	}
	for i := range a {
		if *a[i] != *b[i] {
			t.Fatalf("catalog(500, 7) differs at %d: %+v vs %+v", i, a[i], b[i])
		}
		if i > 0 && (a[i].slow || a[i].rate*a[i].meanLatency().Seconds() > 6.0001) {
			t.Errorf("partner %s uses %.2f permits on average; want <= 6 and not slow", a[i].name, a[i].rate*a[i].meanLatency().Seconds())
		}
	}
	if c := catalog(500, 8, 6000); c[5].median == a[5].median {
		t.Errorf("seeds 7 and 8 gave the same latency to %s", a[5].name)
	}
}

func TestHistogramQuantilesAreWithinBucketPrecision(t *testing.T) {
	var h histogram
	if h.quantile(0.5) != 0 {
		t.Fatalf("empty histogram quantile = %v; want 0", h.quantile(0.5))
	}
	for i := 1; i <= 100; i++ {
		h.record(time.Duration(i) * time.Millisecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}} {
		got := h.quantile(tc.q)
		if got < tc.want || float64(got) > float64(tc.want)*1.1 {
			t.Errorf("quantile(%v) = %v; want within [%v, +10%%]", tc.q, got, tc.want)
		}
	}
}
