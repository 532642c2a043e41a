package main

import (
	"image/color"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/rxbulkhead/bulkhead/bench/eventloop"
)

// speedPlot draws, per benchmark and for the largest GOMAXPROCS, each
// peer's throughput relative to x/sync (x/sync = 1, higher is better).
func speedPlot(res results, benches []string, path string) error {
	p := plot.New()
	p.Title.Text = "Throughput relative to x/sync (higher is better)"
	p.Y.Label.Text = "x/sync ns/op ÷ peer ns/op"
	peers := res.peers(benches[0], peerOrder)
	w := vg.Points(14)
	var names []string
	for _, b := range benches {
		procs := res.procs(b)
		if len(procs) == 0 {
			continue
		}
		names = append(names, benchTitleShort[b]+" (P="+itoa(procs[len(procs)-1])+")")
	}
	for i, peer := range peers {
		var vals plotter.Values
		for _, b := range benches {
			procs := res.procs(b)
			if len(procs) == 0 {
				continue
			}
			pr := procs[len(procs)-1]
			ns, ok1 := res.median(key{b, peer, pr}, "ns/op")
			base, ok2 := res.median(key{b, baselinePeer, pr}, "ns/op")
			v := 0.0
			if ok1 && ok2 && ns > 0 {
				v = base / ns
			}
			vals = append(vals, v)
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(i)-float64(len(peers)-1)/2) * w
		p.Add(bars)
		p.Legend.Add(peer, bars)
	}
	p.Legend.Top = true
	p.Y.Min = 0
	p.Y.Max *= 1.3 // room for the legend
	p.NominalX(names...)
	return p.Save(9*vg.Inch, 4*vg.Inch, path)
}

var benchTitleShort = map[string]string{"TryAcquire": "TryAcquire+Release", "Async": "async fast path", "Contended": "16 goroutines, 4 permits"}

// waiterPlot draws heap plus stack bytes per waiting caller.
func waiterPlot(res results, procs int, path string) error {
	p := plot.New()
	p.Title.Text = "Memory per waiting caller (100k waiters)"
	p.Y.Label.Text = "bytes (heap + goroutine stack)"
	peers := res.peers("CostWaiter", peerOrder)
	var vals plotter.Values
	for _, peer := range peers {
		h, _ := res.median(key{"CostWaiter", peer, procs}, "heapB/waiter")
		s, _ := res.median(key{"CostWaiter", peer, procs}, "stackB/waiter")
		vals = append(vals, h+s)
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(30))
	if err != nil {
		return err
	}
	bars.Color = plotutil.Color(0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	labels, err := plotter.NewLabels(plotter.XYLabels{XYs: barTops(vals), Labels: fmtBytes(vals)})
	if err != nil {
		return err
	}
	p.Add(labels)
	p.NominalX(peers...)
	return p.Save(7*vg.Inch, 3.5*vg.Inch, path)
}

func barTops(vals plotter.Values) plotter.XYs {
	xy := make(plotter.XYs, len(vals))
	for i, v := range vals {
		xy[i] = plotter.XY{X: float64(i) - 0.15, Y: v}
	}
	return xy
}

func fmtBytes(vals plotter.Values) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = itoa(int(v + 0.5))
	}
	return out
}

// eventLoopPlot draws the healthy partners' completed calls per second over
// time: the baseline of the async mode and the three modes with the slow
// partner, with a mark where it slows down.
func eventLoopPlot(e *experiment, path string) error {
	p := plot.New()
	p.Title.Text = "Healthy partners' throughput while partner 0 saturates"
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "completed calls per second"
	add := func(r eventloop.Result, label string, c color.Color, dashed bool) error {
		var xy plotter.XYs
		for _, s := range r.Samples {
			xy = append(xy, plotter.XY{X: (s.At + r.Config.Bin/2).Seconds(), Y: float64(s.Healthy) / r.Config.Bin.Seconds()})
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color = c
		l.Width = vg.Points(1.5)
		if dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(label, l)
		return nil
	}
	if err := add(e.base[eventloop.Async], "no slow partner (async)", color.Gray{Y: 140}, true); err != nil {
		return err
	}
	for i, m := range e.modes {
		if err := add(e.slow[m], m.String(), plotutil.Color(i), false); err != nil {
			return err
		}
	}
	p.Y.Min = 0
	p.Y.Max *= 1.35 // room for the legend
	slowAt := e.slow[eventloop.Async].Config.SlowAt.Seconds()
	mark, err := plotter.NewLine(plotter.XYs{{X: slowAt, Y: 0}, {X: slowAt, Y: p.Y.Max}})
	if err != nil {
		return err
	}
	mark.Color = color.Gray{Y: 180}
	mark.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(mark)
	p.Legend.Top = true
	return p.Save(9*vg.Inch, 4*vg.Inch, path)
}

func itoa(v int) string { return strconv.Itoa(v) }
