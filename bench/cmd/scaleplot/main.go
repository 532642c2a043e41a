// Command scaleplot reads the output of the scale benchmark
// (BenchmarkScale in the bench module, run by `make bench-scale`), prints
// the table of docs/benchmarks.md "The queue at scale" (median and range
// over rounds of each metric, per operation, size and peer) and draws the
// per-waiter cost against N on log scales, one panel per operation.
//
// Usage (from the bench module):
//
//	go run ./cmd/scaleplot -in scale.txt -img ../docs/img/scale.png
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

type key struct {
	op   string
	n    int
	peer string
}

// samples maps a leaf to its metrics' values, one per round.
type samples map[key]map[string][]float64

func main() {
	in := flag.String("in", "scale.txt", "benchmark output to read")
	img := flag.String("img", "", "PNG to draw (none if empty)")
	flag.Parse()
	f, err := os.Open(*in)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	s, ops, err := parse(f)
	if err != nil {
		log.Fatalf("scaleplot: %s: %v", *in, err)
	}
	table(os.Stdout, s, ops)
	if *img != "" {
		if err := draw2(s, ops, *img); err != nil {
			log.Fatalf("scaleplot: %v", err)
		}
	}
}

// parse reads lines such as
// "BenchmarkScale/enqueue/N=1000/rxbulkhead-2  1  96 B/waiter  0 created/waiter ...".
func parse(r io.Reader) (samples, []string, error) {
	s := samples{}
	var ops []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || !strings.HasPrefix(fields[0], "BenchmarkScale/") {
			continue
		}
		parts := strings.Split(strings.TrimPrefix(fields[0], "BenchmarkScale/"), "/")
		if len(parts) != 3 || !strings.HasPrefix(parts[1], "N=") {
			return nil, nil, fmt.Errorf("bad benchmark name %q", fields[0])
		}
		n, err := strconv.Atoi(strings.TrimPrefix(parts[1], "N="))
		if err != nil {
			return nil, nil, fmt.Errorf("bad size in %q", fields[0])
		}
		peer := parts[2]
		if i := strings.LastIndexByte(peer, '-'); i >= 0 {
			if _, err := strconv.Atoi(peer[i+1:]); err == nil {
				peer = peer[:i]
			}
		}
		k := key{parts[0], n, peer}
		if !slices.Contains(ops, k.op) {
			ops = append(ops, k.op)
		}
		if s[k] == nil {
			s[k] = map[string][]float64{}
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, nil, fmt.Errorf("bad value %q in %q", fields[i], fields[0])
			}
			s[k][fields[i+1]] = append(s[k][fields[i+1]], v)
		}
	}
	return s, ops, sc.Err()
}

func median(v []float64) float64 {
	v = slices.Sorted(slices.Values(v))
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func (s samples) sizes(op string) []int {
	var ns []int
	for k := range s {
		if k.op == op && !slices.Contains(ns, k.n) {
			ns = append(ns, k.n)
		}
	}
	slices.Sort(ns)
	return ns
}

// peerOrder lists the peers of the table and plot. The rows of
// rxbulkhead-lockhold (the same benchmark built with the lock-hold
// measurement) give the rxbulkhead rows their longest lock hold only.
var peerOrder = []string{"rxbulkhead", "rxbulkhead-old", "xsync"}

// cell renders the median and, over several rounds, the range of a metric.
func cell(v []float64, prec int) string {
	if len(v) == 0 {
		return "—"
	}
	m := strconv.FormatFloat(median(v), 'f', prec, 64)
	if len(v) == 1 {
		return m
	}
	lo, hi := slices.Min(v), slices.Max(v)
	return fmt.Sprintf("%s (%s–%s)", m, strconv.FormatFloat(lo, 'f', prec, 64), strconv.FormatFloat(hi, 'f', prec, 64))
}

func table(w io.Writer, s samples, ops []string) {
	fmt.Fprintln(w, "| operation | N | peer | ns/waiter | B/waiter | goroutines created/waiter | peak goroutines | longest lock hold, wall (µs) | same, thread CPU (µs) |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|---:|---:|")
	for _, op := range ops {
		for _, n := range s.sizes(op) {
			for _, p := range peerOrder {
				m, ok := s[key{op, n, p}]
				if !ok {
					continue
				}
				hold, holdCPU := m["maxLockHold-µs"], m["maxLockHoldCPU-µs"]
				if p == "rxbulkhead" {
					l := s[key{op, n, "rxbulkhead-lockhold"}]
					hold, holdCPU = l["maxLockHold-µs"], l["maxLockHoldCPU-µs"]
				}
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", op, human(n), p,
					cell(m["ns/waiter"], 0), cell(m["B/waiter"], 0), cell(m["created/waiter"], 4),
					cell(m["peak-goroutines"], 0), cell(hold, 0), cell(holdCPU, 0))
			}
		}
	}
}

func human(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// draw2 draws one panel per operation: median ns/waiter against N, both on
// log scales, one line per peer.
func draw2(s samples, ops []string, path string) error {
	const cols = 4
	rows := (len(ops) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for r := range plots {
		plots[r] = make([]*plot.Plot, cols)
	}
	for i, op := range ops {
		p := plot.New()
		p.Title.Text = op
		p.X.Label.Text = "waiters N"
		p.Y.Label.Text = "ns per waiter"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
		for j, peer := range peerOrder {
			var xy plotter.XYs
			for _, n := range s.sizes(op) {
				if m, ok := s[key{op, n, peer}]; ok && len(m["ns/waiter"]) > 0 {
					xy = append(xy, plotter.XY{X: float64(n), Y: median(m["ns/waiter"])})
				}
			}
			if len(xy) == 0 {
				continue
			}
			l, pts, err := plotter.NewLinePoints(xy)
			if err != nil {
				return err
			}
			l.Color, pts.Color = plotutil.Color(j), plotutil.Color(j)
			pts.Shape = plotutil.Shape(j)
			p.Add(l, pts)
			p.Legend.Add(peer, l, pts)
		}
		p.Legend.Top = true
		plots[i/cols][i%cols] = p
	}
	img := vgimg.New(16*vg.Inch, vg.Length(rows)*4*vg.Inch)
	dc := draw.New(img)
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, t, dc)
	for r := range plots {
		for c := range plots[r] {
			if plots[r][c] != nil {
				plots[r][c].Draw(canvases[r][c])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
