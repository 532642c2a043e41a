package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// printReport writes the comparison table of the runs.
func printReport(w io.Writer, ps []*partner, runs []*result) {
	o := runs[0].opts
	fmt.Fprintf(w, "EDI hub over loopback HTTP: %d partner servers, %d permits and a queue of %d each;\nwalmart slows %gx after %v; %v per run\n\n",
		len(ps), o.permits, o.queue, o.slowBy, o.slowAfter, o.duration)
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(label string, cells ...string) {
		fmt.Fprintf(tw, "%-18s\t", label) // equal widths: labels stay left-aligned
		for _, c := range cells {
			fmt.Fprint(tw, c+"\t")
		}
		fmt.Fprintln(tw)
	}
	var head1, head2 []string
	for _, r := range runs {
		head1 = append(head1, r.mode.String(), "")
		head2 = append(head2, "walmart", fmt.Sprintf("healthy (%d)", len(ps)-1))
	}
	row("", head1...)
	row("", head2...)
	perClass := func(label string, f func(c *class) string) {
		var cells []string
		for _, r := range runs {
			cells = append(cells, f(r.walmart), f(r.healthy))
		}
		row(label, cells...)
	}
	perClass("permitted", func(c *class) string { return fmt.Sprint(c.permitted.Load()) })
	perClass("queued", func(c *class) string { return fmt.Sprint(c.queued.Load()) })
	perClass("rejected", func(c *class) string { return fmt.Sprint(c.rejected.Load()) })
	perClass("p50", func(c *class) string { return ms(c.latency.quantile(0.50)) })
	perClass("p99", func(c *class) string { return ms(c.latency.quantile(0.99)) })
	perRun := func(label string, f func(r *result) string) {
		var cells []string
		for _, r := range runs {
			cells = append(cells, f(r), "")
		}
		row(label, cells...)
	}
	perRun("goroutines (peak)", func(r *result) string { return fmt.Sprint(r.peakGoroutines) })
	perRun("heap (peak)", func(r *result) string { return mib(r.peakHeap) })
	perRun("stacks (peak)", func(r *result) string { return mib(r.peakStacks) })
	perRun("CPU time", func(r *result) string { return r.cpu.Round(10 * time.Millisecond).String() })
	perRun("pending goroutines", func(r *result) string { return fmt.Sprintf("%.2f", r.pending.goroutines) })
	perRun("pending heap", func(r *result) string { return bytesOf(r.pending.heap) })
	tw.Flush()
	for line := range strings.Lines(table.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
	fmt.Fprintf(w, "\nOne process runs the hub and the %d partner servers: goroutines, heap and CPU count both.\n"+
		"pending: what one document waiting for its permit adds (goroutines, live heap after GC),\n"+
		"measured after each run, the median of %d batches of %d documents waiting for walmart.\n", len(ps), probeSamples, probeCalls)
	for _, r := range runs {
		if r.maxStall > stallWarning {
			fmt.Fprintf(w, "\nnote: the %s run was starved of CPU for up to %v (a busy machine): every partner's calls\n"+
				"      finished late then, so its latencies and rejections include that stall.\n", r.mode, r.maxStall.Round(time.Millisecond))
		}
	}
}

// stallWarning is the gap between two 1 ms ticks of the sender beyond which
// the report says the process did not get the CPU it needed.
const stallWarning = 250 * time.Millisecond

func ms(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.1fms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.0fms", float64(d)/1e6)
}

// bytesOf formats a (possibly fractional) byte count per call.
func bytesOf(b float64) string {
	if b >= 1024 || b <= -1024 {
		return fmt.Sprintf("%.1f KiB", b/1024)
	}
	return fmt.Sprintf("%.0f B", b)
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
