package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"time"
)

var (
	white     = color.RGBA{255, 255, 255, 255}
	ink       = color.RGBA{40, 40, 40, 255}
	grid      = color.RGBA{225, 225, 225, 255}
	slowColor = color.RGBA{214, 39, 40, 255}  // walmart
	okColor   = color.RGBA{31, 119, 180, 255} // healthy partners
	markColor = color.RGBA{150, 150, 150, 255}
)

const (
	chartW, chartH = 960, 600
	left, right    = 80, 20
)

// panel is one plot area with its axes' ranges.
type panel struct {
	img        *image.RGBA
	x0, y0     int // top-left of the plot area
	w, h       int
	tmax       float64 // seconds
	ymin, ymax float64 // in axis units (log10 for a log panel)
	log        bool
}

func (p *panel) px(t float64) int { return p.x0 + int(t/p.tmax*float64(p.w)) }

func (p *panel) py(v float64) int {
	if p.log {
		v = math.Log10(max(v, math.Pow(10, p.ymin)))
	}
	f := (v - p.ymin) / (p.ymax - p.ymin)
	return p.y0 + p.h - int(min(max(f, 0), 1)*float64(p.h))
}

// drawChart writes a PNG with two panels sharing the time axis: the p99
// latency of walmart and of the healthy partners (log scale), and the
// rejections per second of each. Solid lines are the first run (the
// registry), dashed lines the second (the goroutine pool).
func drawChart(w io.Writer, runs []*result) error {
	img := image.NewRGBA(image.Rect(0, 0, chartW, chartH))
	draw.Draw(img, img.Bounds(), &image.Uniform{white}, image.Point{}, draw.Src)
	o := runs[0].opts
	tmax := o.duration.Seconds()
	drawText(img, left, 12, "EDI hub: walmart slows "+fmt.Sprint(o.slowBy)+"x - p99 latency and rejections over time", 2, ink)

	// Latency panel: 1 ms .. 10 s, log scale.
	lat := &panel{img: img, x0: left, y0: 60, w: chartW - left - right, h: 220, tmax: tmax, ymin: 0, ymax: 4, log: true}
	for e := 0; e <= 4; e++ {
		v := math.Pow(10, float64(e))
		y := lat.py(v)
		hline(img, lat.x0, lat.x0+lat.w, y, grid)
		label := fmt.Sprintf("%gms", v)
		if v >= 1000 {
			label = fmt.Sprintf("%gs", v/1000)
		}
		drawText(img, lat.x0-textWidth(label, 1)-6, y-3, label, 1, ink)
	}
	drawText(img, lat.x0, lat.y0-14, "p99 latency (document sent - partner answered)", 1, ink)

	// Rejection panel: linear, 0 .. a round maximum.
	peak := 1.0
	for _, r := range runs {
		for _, s := range []*series{r.slowT, r.healthyT} {
			for i := range s.rejected {
				peak = max(peak, float64(s.rejected[i].Load())/o.bin.Seconds())
			}
		}
	}
	top := niceCeil(peak)
	rej := &panel{img: img, x0: left, y0: 340, w: lat.w, h: 200, tmax: tmax, ymin: 0, ymax: top}
	for k := 0; k <= 4; k++ {
		v := top * float64(k) / 4
		y := rej.py(v)
		hline(img, rej.x0, rej.x0+rej.w, y, grid)
		label := fmt.Sprintf("%g", v)
		drawText(img, rej.x0-textWidth(label, 1)-6, y-3, label, 1, ink)
	}
	drawText(img, rej.x0, rej.y0-14, "rejections per second", 1, ink)

	// Time axis, and the moment walmart slows down.
	for t := 0.0; t <= tmax+1e-9; t++ {
		x := rej.px(t)
		label := fmt.Sprintf("%gs", t)
		drawText(img, x-textWidth(label, 1)/2, rej.y0+rej.h+8, label, 1, ink)
	}
	for _, p := range []*panel{lat, rej} {
		x := p.px(o.slowAfter.Seconds())
		dashedV(img, x, p.y0, p.y0+p.h, markColor)
		hline(img, p.x0, p.x0+p.w, p.y0+p.h, ink)
		vline(img, p.x0, p.y0, p.y0+p.h, ink)
	}
	drawText(img, lat.px(o.slowAfter.Seconds())+4, lat.y0+4, "walmart slows down", 1, markColor)

	for k, r := range runs {
		dashed := k > 0
		for _, c := range []struct {
			s   *series
			col color.RGBA
		}{{r.slowT, slowColor}, {r.healthyT, okColor}} {
			var latPts, rejPts [][2]float64
			for i := range c.s.rejected {
				t := (float64(i) + 0.5) * o.bin.Seconds()
				if q := c.s.latency[i].quantile(0.99); q > 0 {
					latPts = append(latPts, [2]float64{t, float64(q) / float64(time.Millisecond)})
				}
				rejPts = append(rejPts, [2]float64{t, float64(c.s.rejected[i].Load()) / o.bin.Seconds()})
			}
			polyline(lat, latPts, c.col, dashed)
			polyline(rej, rejPts, c.col, dashed)
		}
	}

	// Legend.
	ly := chartH - 26
	x := left
	for _, e := range []struct {
		label  string
		col    color.RGBA
		dashed bool
	}{
		{"walmart, " + runs[0].mode.String(), slowColor, false},
		{"healthy, " + runs[0].mode.String(), okColor, false},
	} {
		legendEntry(img, &x, ly, e.label, e.col, e.dashed)
	}
	if len(runs) > 1 {
		legendEntry(img, &x, ly, "walmart, "+runs[1].mode.String(), slowColor, true)
		legendEntry(img, &x, ly, "healthy, "+runs[1].mode.String(), okColor, true)
	}
	return png.Encode(w, img)
}

func legendEntry(img *image.RGBA, x *int, y int, label string, c color.RGBA, dashed bool) {
	for i := range 24 {
		if !dashed || (i/4)%2 == 0 {
			img.Set(*x+i, y+3, c)
			img.Set(*x+i, y+4, c)
		}
	}
	drawText(img, *x+30, y, label, 1, ink)
	*x += 30 + textWidth(label, 1) + 24
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

func hline(img *image.RGBA, x0, x1, y int, c color.Color) {
	for x := x0; x <= x1; x++ {
		img.Set(x, y, c)
	}
}

func vline(img *image.RGBA, x, y0, y1 int, c color.Color) {
	for y := y0; y <= y1; y++ {
		img.Set(x, y, c)
	}
}

func dashedV(img *image.RGBA, x, y0, y1 int, c color.Color) {
	for y := y0; y <= y1; y++ {
		if (y/5)%2 == 0 {
			img.Set(x, y, c)
		}
	}
}

// polyline joins the points (time in seconds, value) with 2-pixel lines.
func polyline(p *panel, pts [][2]float64, c color.RGBA, dashed bool) {
	step := 0
	for i := 1; i < len(pts); i++ {
		x0, y0 := p.px(pts[i-1][0]), p.py(pts[i-1][1])
		x1, y1 := p.px(pts[i][0]), p.py(pts[i][1])
		n := max(abs(x1-x0), abs(y1-y0), 1)
		for k := 0; k <= n; k++ {
			step++
			if dashed && (step/6)%2 == 1 {
				continue
			}
			x := x0 + (x1-x0)*k/n
			y := y0 + (y1-y0)*k/n
			p.img.Set(x, y, c)
			p.img.Set(x, y+1, c)
			p.img.Set(x+1, y, c)
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
