package adaptivesim

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
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
	color.RGBA{128, 128, 0, 255},   // olive
	color.RGBA{0, 0, 0, 255},       // black
}

func colorOf(i int) color.Color { return palette[i%len(palette)] }

// cellNamed returns the cell whose String is name.
func cellNamed(name string) (Cell, bool) {
	for _, c := range Cells() {
		if c.String() == name {
			return c, true
		}
	}
	return Cell{}, false
}

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

// limitLine is a run's limit over time, averaged over 1 s as the goals
// measure it, clipped at ymax.
func limitLine(sc Scenario, run Run, ymax float64) (*plotter.Line, error) {
	avg := movingAverage(run.Limits, int(time.Second/sc.Trace))
	pts := make(plotter.XYs, len(avg))
	for k, l := range avg {
		pts[k] = plotter.XY{X: (time.Duration(k) * sc.Trace).Seconds(), Y: math.Min(l, ymax)}
	}
	return plotter.NewLine(pts)
}

// limitsPlot draws the runs of names in cell cr against its capacity.
func limitsPlot(cr CellResult, names []string, ymax float64) (*plot.Plot, error) {
	c, ok := cellNamed(cr.Cell.String())
	if !ok {
		return nil, fmt.Errorf("adaptivesim: no cell %q", cr.Cell)
	}
	sc := c.Scenario(1)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s (seed 1): limit averaged over 1 s; dashed: capacity C", c)
	p.Y.Label.Text = "limit (calls)"
	p.X.Label.Text = "simulated time (s)"
	p.Y.Min, p.Y.Max = 0, ymax
	cl, err := capacityLine(sc)
	if err != nil {
		return nil, err
	}
	p.Add(cl)
	p.Legend.Add("C", cl)
	for i, name := range names {
		run, ok := cr.Traces[name]
		if !ok {
			continue
		}
		l, err := limitLine(sc, run, ymax)
		if err != nil {
			return nil, err
		}
		l.Color = colorOf(i)
		l.Width = vg.Points(1)
		p.Add(l)
		p.Legend.Add(name, l)
	}
	p.Legend.Top = true
	p.Legend.XOffs = -vg.Points(10)
	return p, nil
}

// writePlots writes adaptive-limits.png (every contender in the traced
// cells) and adaptive-guide.png (the default algorithm) into dir.
func writePlots(m Matrix, dir string) error {
	var all, guide []*plot.Plot
	for _, cr := range m.Results {
		if len(cr.Traces) == 0 {
			continue
		}
		p, err := limitsPlot(cr, m.Names, 160)
		if err != nil {
			return err
		}
		all = append(all, p)
		g, err := limitsPlot(cr, []string{DefaultName, "static"}, 160)
		if err != nil {
			return err
		}
		guide = append(guide, g)
	}
	if err := saveStacked(filepath.Join(dir, "adaptive-limits.png"), 11*vg.Inch, 10*vg.Inch, all...); err != nil {
		return err
	}
	return saveStacked(filepath.Join(dir, "adaptive-guide.png"), 9*vg.Inch, 6*vg.Inch, guide...)
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
