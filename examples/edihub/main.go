package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "edihub:", err)
		os.Exit(2)
	}
}

// run parses args, starts the partners' servers on 127.0.0.1, runs the
// bulkheadhttp and the pool simulation with the same traffic, prints the
// table to out and writes the chart.
func run(args []string, out, progress io.Writer) error {
	return runOn(loopback{}, args, out, progress)
}

// runOn is run with the partners' servers on nw.
func runOn(nw network, args []string, out, progress io.Writer) error {
	o := defaultOptions()
	fs := flag.NewFlagSet("edihub", flag.ContinueOnError)
	fs.SetOutput(progress)
	fs.IntVar(&o.partners, "partners", o.partners, "number of trading partners (walmart is one of them)")
	fs.DurationVar(&o.duration, "duration", o.duration, "length of each of the two runs")
	fs.DurationVar(&o.slowAfter, "slow-after", o.slowAfter, "when walmart slows down")
	fs.Float64Var(&o.slowBy, "slow-by", o.slowBy, "how many times slower walmart becomes")
	fs.Float64Var(&o.healthyRate, "rate", o.healthyRate, "documents per second shared by the partners other than walmart (400/s)")
	fs.Uint64Var(&o.seed, "seed", o.seed, "seed of the partner catalog and the traffic")
	chart := fs.String("chart", filepath.Join(os.TempDir(), "edihub.png"), "PNG chart to write (empty: none)")
	pool := fs.Bool("pool", true, "also run the goroutine-pool bulkhead for comparison")
	adaptiveRun := fs.Bool("adaptive", false, "also run bulkheadhttp with walmart's limit adaptive (package adaptive)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	monthEnd := fs.Bool("month-end", true, "then run the month-end act: a batch burst at a hub of 200 units, with and without a hub budget")
	metricsAddr := fs.String("metrics", "127.0.0.1:2112", "serve the runs' bulkheads on http://ADDR/metrics while the demo runs (empty: do not)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // usage already printed
		}
		return err
	}
	if err := o.validate(); err != nil {
		return err
	}
	if !*quiet {
		o.progress = progress
	}
	modes := []mode{transportMode}
	if *pool {
		modes = append(modes, poolMode)
	}
	if *adaptiveRun {
		modes = append(modes, adaptiveMode)
	}
	if *metricsAddr != "" {
		m, err := startMetrics(*metricsAddr)
		if err != nil {
			return err
		}
		defer m.close()
		o.metrics = m
		fmt.Fprintf(progress, "serving the bulkheads' metrics on %s while the demo runs\n", m.url)
	}
	ps := catalog(o.partners, o.seed, o.healthyRate)
	servers, err := startPartners(nw, ps, o.seed)
	if err != nil {
		return err
	}
	defer stopPartners(servers)
	if err := warmUp(modes[0], ps, servers, nw, o); err != nil {
		return err
	}
	var runs []*result
	for _, m := range modes {
		r, err := simulate(m, ps, servers, nw, o)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	var monthEndRuns []*monthEndRun
	if *monthEnd {
		me := defaultMonthEnd()
		me.seed = o.seed
		calls := monthEndCalls(me)
		for _, withBudget := range []bool{true, false} {
			if !*quiet {
				fmt.Fprintf(progress, "month-end burst, %s...\n", map[bool]string{true: "with the hub budget", false: "without a budget"}[withBudget])
			}
			r, err := runMonthEnd(withBudget, me, calls, o.metrics)
			if err != nil {
				return err
			}
			monthEndRuns = append(monthEndRuns, r)
		}
	}
	fmt.Fprintln(out)
	printReport(out, ps, runs)
	printLimitTrace(out)
	if monthEndRuns != nil {
		printMonthEnd(out, monthEndRuns)
	}
	if o.metrics != nil {
		if err := printMetrics(out, o.metrics, ps[slowPartner(ps)].name); err != nil {
			return err
		}
	}
	if *chart != "" {
		f, err := os.Create(*chart)
		if err != nil {
			return err
		}
		if err := drawChart(f, runs); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Fprintf(out, "\nchart: %s\n", *chart)
		if monthEndRuns != nil {
			path := strings.TrimSuffix(*chart, ".png") + "-month-end.png"
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			if err := drawMonthEnd(f, monthEndRuns); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(out, "month-end chart: %s\n", path)
		}
	}
	return nil
}
