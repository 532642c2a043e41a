package main

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead/bench/eventloop"
)

func fakeResults() results {
	r := results{}
	set := func(bench, peer string, procs int, units map[string]float64) {
		m := map[string][]float64{}
		for u, v := range units {
			m[u] = []float64{v}
		}
		r[key{bench, peer, procs}] = m
	}
	for _, procs := range []int{1, 2} {
		for _, b := range []string{"TryAcquire", "Async", "Contended"} {
			set(b, "rxbulkhead", procs, map[string]float64{"ns/op": 10, "B/op": 0, "allocs/op": 0})
			set(b, "xsync", procs, map[string]float64{"ns/op": 20, "B/op": 0, "allocs/op": 0})
		}
	}
	set("CostWaiter", "rxbulkhead", 2, map[string]float64{"heapB/waiter": 112, "stackB/waiter": 0, "goroutines/waiter": 0})
	set("CostWaiter", "xsync", 2, map[string]float64{"heapB/waiter": 700, "stackB/waiter": 2048, "goroutines/waiter": 1})
	set("CostPartners", "rxbulkhead", 2, map[string]float64{"heapKB": 90, "stackKB": 0, "goroutines": 0})
	set("CostPartners", "pool", 2, map[string]float64{"heapKB": 1300, "stackKB": 39000, "goroutines": 10000})
	return r
}

func fakeExperiment() *experiment {
	e := &experiment{
		modes: []eventloop.Mode{eventloop.Blocking, eventloop.FailFast, eventloop.Async},
		base:  map[eventloop.Mode]eventloop.Result{},
		slow:  map[eventloop.Mode]eventloop.Result{},
		rates: map[eventloop.Mode][2][]float64{},
		reps:  1,
	}
	rate := map[eventloop.Mode][2]int64{eventloop.Blocking: {50, 10}, eventloop.FailFast: {1000, 800}, eventloop.Async: {1000, 990}}
	for m, r := range rate {
		for i, slow := range []bool{false, true} {
			cfg := eventloop.DefaultConfig(m, slow)
			cfg.Duration, cfg.SlowAt = 4*time.Second, time.Second
			res := eventloop.Result{Config: cfg}
			for at := time.Duration(0); at < cfg.Duration; at += cfg.Bin {
				res.Samples = append(res.Samples, eventloop.Sample{At: at, Healthy: r[i] / 10})
			}
			if slow {
				e.slow[m] = res
			} else {
				e.base[m] = res
			}
			rates := e.rates[m]
			rates[i] = []float64{res.HealthyRate()}
			e.rates[m] = rates
		}
	}
	return e
}

func TestRenderWritesTablesHeadlineAndPlots(t *testing.T) {
	dir := t.TempDir()
	d := &document{res: fakeResults(), el: fakeExperiment(), imgDir: filepath.Join(dir, "img"), imgRel: "img",
		date: time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC), cpu: "Test CPU (2 logical CPUs)", goVersion: "go1.26", command: "make bench"}
	if err := os.MkdirAll(d.imgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	md, err := d.render()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"2026-11-29 19:00 UTC", "Test CPU (2 logical CPUs)",
		"**0.50× x/sync's time** (2.00× its throughput)",
		"costs rxbulkhead **112 B and 0 goroutines**",
		"blocking **0.01**, fail-fast **0.80**, async **0.99**",
		"| rxbulkhead | 10.0 | 0 | 0 | 0.50× |",
		"row reserved", "Blocking collapses", "![", "img/eventloop.png", "async 1000 / 990",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("document lacks %q", want)
		}
	}
	for _, name := range []string{"speed.png", "waiters.png", "eventloop.png"} {
		f, err := os.Open(filepath.Join(d.imgDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s is not a PNG: %v", name, err)
		}
		f.Close()
	}
}

func TestRunNeedsABenchFileWithResults(t *testing.T) {
	var log strings.Builder
	if err := run(nil, &log); err == nil || !strings.Contains(err.Error(), "-bench is required") {
		t.Errorf("run without -bench: %v; want it to ask for -bench", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.txt")
	if err := os.WriteFile(empty, []byte("PASS\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-bench", empty, "-eventloop-duration", "0"}, &log); err == nil || !strings.Contains(err.Error(), "no benchmark results") {
		t.Errorf("run on an empty file: %v; want 'no benchmark results'", err)
	}
	one := filepath.Join(t.TempDir(), "one.txt")
	if err := os.WriteFile(one, []byte("BenchmarkA/p 1 5 ns/op\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-bench", one, "-eventloop-reps", "2"}, &log); err == nil || !strings.Contains(err.Error(), "-eventloop-reps must be odd") {
		t.Errorf("run with 2 reps: %v; want it to ask for an odd count", err)
	}
}
