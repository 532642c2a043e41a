package adaptivesim

import (
	"image/color"
	"math"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// palette has a distinct color per limiter.
var palette = []color.Color{
	color.RGBA{228, 26, 28, 255},   // red
	color.RGBA{55, 126, 184, 255},  // blue
	color.RGBA{77, 175, 74, 255},   // green
	color.RGBA{255, 127, 0, 255},   // orange
	color.RGBA{152, 78, 163, 255},  // purple
	color.RGBA{166, 86, 40, 255},   // brown
	color.RGBA{247, 129, 191, 255}, // pink
	color.RGBA{153, 153, 153, 255}, // grey
	color.RGBA{0, 128, 128, 255},   // teal
}

func colorOf(i int) color.Color { return palette[i%len(palette)] }

// latencyTicks label the log axis of relative latency.
var latencyTicks = plot.ConstantTicks([]plot.Tick{{Value: 1, Label: "1x"}, {Value: 2, Label: "2x"}, {Value: 5, Label: "5x"}, {Value: 10, Label: "10x"}})

// capacityLine is the partner's capacity over time, as a step line.
func capacityLine(sc Scenario) (*plotter.Line, error) {
	var pts plotter.XYs
	from := 0.0
	for _, s := range sc.Segments {
		pts = append(pts, plotter.XY{X: from, Y: float64(s.Capacity)}, plotter.XY{X: s.Until.Seconds(), Y: float64(s.Capacity)})
		from = s.Until.Seconds()
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, err
	}
	l.Color = color.Black
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	l.Width = vg.Points(1.5)
	return l, nil
}

// limitLine is a run's limit over time, clipped at ymax.
func limitLine(sc Scenario, run Run, ymax float64) (*plotter.Line, error) {
	pts := make(plotter.XYs, len(run.Limits))
	for k, l := range run.Limits {
		pts[k] = plotter.XY{X: (time.Duration(k) * sc.Trace).Seconds(), Y: math.Min(float64(l), ymax)}
	}
	return plotter.NewLine(pts)
}

// p99Line is a run's p99 latency per bin, relative to the unloaded p99,
// by the time the calls were sent; rejected calls do not count.
func p99Line(sc Scenario, run Run, bin time.Duration) (*plotter.Line, error) {
	base := float64(sc.Partner.UnloadedP99())
	n := int(sc.End() / bin)
	bins := make([][]time.Duration, n)
	for _, c := range run.Calls {
		if c.Rejected {
			continue
		}
		if i := int(c.Sent / bin); i < n {
			bins[i] = append(bins[i], c.Latency)
		}
	}
	var pts plotter.XYs
	for i, b := range bins {
		if len(b) == 0 {
			continue
		}
		slices.Sort(b)
		pts = append(pts, plotter.XY{X: (time.Duration(i)*bin + bin/2).Seconds(), Y: float64(b[len(b)*99/100]) / base})
	}
	return plotter.NewLine(pts)
}

// comparisonPlots draws, one above the other, every run's limit with the
// capacity, and every run's p99 latency, and saves them as a PNG.
func comparisonPlots(sc Scenario, runs []Run, path string) error {
	limits := plot.New()
	limits.Title.Text = "Limit over time (dashed: the partner's true capacity C)"
	limits.Y.Label.Text = "limit (calls)"
	limits.Y.Min, limits.Y.Max = 0, 270
	lat := plot.New()
	lat.Title.Text = "p99 latency of admitted calls per second, relative to the base latency (log)"
	lat.X.Label.Text = "simulated time (s)"
	lat.Y.Scale = plot.LogScale{}
	lat.Y.Label.Text = "p99 / base latency"
	lat.Y.Tick.Marker = latencyTicks
	lat.Y.Min, lat.Y.Max = 0.8, 12
	c, err := capacityLine(sc)
	if err != nil {
		return err
	}
	limits.Add(c)
	limits.Legend.Add("C", c)
	for i, run := range runs {
		l, err := limitLine(sc, run, limits.Y.Max)
		if err != nil {
			return err
		}
		l.Color = colorOf(i)
		l.Width = vg.Points(1)
		limits.Add(l)
		limits.Legend.Add(run.Name, l)
		p, err := p99Line(sc, run, time.Second)
		if err != nil {
			return err
		}
		p.Color = colorOf(i)
		p.Width = vg.Points(1)
		lat.Add(p)
	}
	limits.Legend.Top = true
	limits.Legend.Left = true
	limits.Legend.XOffs = vg.Points(20)
	return saveStacked(path, 10*vg.Inch, 8*vg.Inch, limits, lat)
}

// guidePlot draws one run's limit against the capacity, and its p99
// latency against the 2x goal.
func guidePlot(sc Scenario, run Run, path string) error {
	limits := plot.New()
	limits.Title.Text = "The partner's capacity drops tenfold at 25 s and recovers at 40 s"
	limits.Y.Label.Text = "calls"
	limits.Y.Min, limits.Y.Max = 0, 160
	c, err := capacityLine(sc)
	if err != nil {
		return err
	}
	l, err := limitLine(sc, run, limits.Y.Max)
	if err != nil {
		return err
	}
	l.Color = colorOf(3)
	l.Width = vg.Points(1.2)
	limits.Add(c, l)
	limits.Legend.Add("capacity C", c)
	limits.Legend.Add("adaptive limit ("+run.Name+")", l)
	limits.Legend.Top = true
	lat := plot.New()
	lat.Title.Text = "p99 latency per second, relative to the partner's base latency (100 ms)"
	lat.X.Label.Text = "simulated time (s)"
	lat.Y.Min, lat.Y.Max = 0, 3
	p, err := p99Line(sc, run, time.Second)
	if err != nil {
		return err
	}
	p.Color = colorOf(3)
	p.Width = vg.Points(1.2)
	goal, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 2}, {X: sc.End().Seconds(), Y: 2}})
	if err != nil {
		return err
	}
	goal.Color = color.Gray{Y: 128}
	goal.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	lat.Add(p, goal)
	lat.Legend.Add("p99 / base latency", p)
	lat.Legend.Add("goal: 2x", goal)
	lat.Legend.Top = true
	return saveStacked(path, 9*vg.Inch, 6*vg.Inch, limits, lat)
}

// saveStacked saves plots one above the other as a PNG.
func saveStacked(path string, w, h vg.Length, plots ...*plot.Plot) error {
	img := vgimg.New(w, h)
	dc := draw.New(img)
	rows := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		rows[i] = []*plot.Plot{p}
	}
	t := draw.Tiles{Rows: len(plots), Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadY: vg.Points(10), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align(rows, t, dc)
	for i, p := range plots {
		p.Draw(canvases[i][0])
	}
	png := vgimg.PngCanvas{Canvas: img}
	f, err := createFile(path)
	if err != nil {
		return err
	}
	if _, err := png.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
