package main

import (
	"bufio"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/rxbulkhead/bulkhead/bench/eventloop"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(1)
	}
}

func run(args []string, log io.Writer) error {
	fs := flag.NewFlagSet("benchdoc", flag.ContinueOnError)
	fs.SetOutput(log)
	benchFile := fs.String("bench", "", "go test -bench output of the bench module (required)")
	benchstatFile := fs.String("benchstat", "", "benchstat output to include verbatim (optional)")
	out := fs.String("out", "../docs/benchmarks.md", "Markdown file to write")
	imgDir := fs.String("img", "../docs/img", "directory for the PNG plots")
	elDuration := fs.Duration("eventloop-duration", 3*time.Second, "length of each event-loop run (0: skip the experiment)")
	elReps := fs.Int("eventloop-reps", 5, "runs of each event-loop configuration; the median is reported (odd)")
	command := fs.String("command", "make bench", "the command quoted in the document as the way to regenerate it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *benchFile == "" {
		return errors.New("-bench is required")
	}
	f, err := os.Open(*benchFile)
	if err != nil {
		return err
	}
	res, err := parseBench(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", *benchFile, err)
	}
	if len(res) == 0 {
		return fmt.Errorf("%s: no benchmark results", *benchFile)
	}
	var benchstat string
	if *benchstatFile != "" {
		b, err := os.ReadFile(*benchstatFile)
		if err != nil {
			return err
		}
		benchstat = string(b)
	}
	var el *experiment
	if *elDuration > 0 {
		if *elReps < 1 || *elReps%2 == 0 {
			return fmt.Errorf("-eventloop-reps must be odd and positive, got %d", *elReps)
		}
		fmt.Fprintf(log, "benchdoc: running the event-loop experiment (%d runs of %v)\n", 6**elReps, *elDuration)
		el, err = runExperiment(*elDuration, *elReps, log)
		if err != nil {
			return err
		}
	}
	if err := os.MkdirAll(*imgDir, 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(*out), *imgDir)
	if err != nil {
		rel = *imgDir
	}
	d := &document{
		res:       res,
		el:        el,
		benchstat: benchstat,
		imgDir:    *imgDir,
		imgRel:    filepath.ToSlash(rel),
		date:      time.Now().UTC(),
		cpu:       cpuModel(),
		goVersion: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		command:   *command,
	}
	md, err := d.render()
	if err != nil {
		return err
	}
	kept, err := keptSections(*out)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, []byte(md+kept), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(log, "benchdoc: wrote %s and plots in %s\n", *out, *imgDir)
	return nil
}

// experiment holds the event-loop runs: for each mode, a baseline (no slow
// partner) and a run where partner 0 slows down. Each configuration ran reps
// times, interleaved; base and slow keep the run with the median healthy
// rate, rates all of them.
type experiment struct {
	modes []eventloop.Mode
	reps  int
	base  map[eventloop.Mode]eventloop.Result
	slow  map[eventloop.Mode]eventloop.Result
	rates map[eventloop.Mode][2][]float64 // [baseline, slow] healthy rates of every rep
}

func runExperiment(d time.Duration, reps int, log io.Writer) (*experiment, error) {
	e := &experiment{
		modes: []eventloop.Mode{eventloop.Blocking, eventloop.FailFast, eventloop.Async},
		reps:  reps,
		base:  map[eventloop.Mode]eventloop.Result{},
		slow:  map[eventloop.Mode]eventloop.Result{},
		rates: map[eventloop.Mode][2][]float64{},
	}
	all := map[eventloop.Mode][2][]eventloop.Result{}
	for rep := range reps {
		for _, m := range e.modes {
			for i, slow := range []bool{false, true} {
				cfg := eventloop.DefaultConfig(m, slow)
				cfg.Duration, cfg.SlowAt, cfg.Seed = d, d/4, uint64(rep)
				r, err := eventloop.Run(cfg)
				if err != nil {
					return nil, fmt.Errorf("event loop %v (slow %v): %w", m, slow, err)
				}
				fmt.Fprintf(log, "benchdoc:   run %d %-9v slow=%-5v healthy %8.0f calls/s\n", rep+1, m, slow, r.HealthyRate())
				runs := all[m]
				runs[i] = append(runs[i], r)
				all[m] = runs
			}
		}
	}
	for _, m := range e.modes {
		var rates [2][]float64
		for i := range 2 {
			runs := slices.Clone(all[m][i])
			slices.SortFunc(runs, func(a, b eventloop.Result) int { return cmp.Compare(a.HealthyRate(), b.HealthyRate()) })
			for _, r := range runs {
				rates[i] = append(rates[i], r.HealthyRate())
			}
			if i == 0 {
				e.base[m] = runs[len(runs)/2]
			} else {
				e.slow[m] = runs[len(runs)/2]
			}
		}
		e.rates[m] = rates
	}
	return e, nil
}

// ratio is the healthy throughput of mode m with the slow partner relative
// to the reference: the run without a slow partner in async mode, which
// shows what the loops sustain when no bulkhead is full.
func (e *experiment) ratio(m eventloop.Mode) float64 {
	return safeDiv(e.slow[m].HealthyRate(), e.base[eventloop.Async].HealthyRate())
}

// ownRatio is the healthy throughput with the slow partner relative to the
// run without it in the same mode.
func (e *experiment) ownRatio(m eventloop.Mode) float64 {
	return safeDiv(e.slow[m].HealthyRate(), e.base[m].HealthyRate())
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// cpuModel returns the "model name" line of /proc/cpuinfo and the number of
// logical CPUs, or what runtime knows when /proc is not there.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return fmt.Sprintf("unknown (%d logical CPUs)", runtime.NumCPU())
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return fmt.Sprintf("%s (%d logical CPUs)", strings.TrimSpace(v), runtime.NumCPU())
		}
	}
	return fmt.Sprintf("unknown (%d logical CPUs)", runtime.NumCPU())
}
