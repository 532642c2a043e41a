package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// printMonthEnd writes the act's table: interactive latency before and
// during the burst, the hub's utilisation while calls waited for it, the
// waits in the hub per class, and the documents' fate, with and without
// the budget.
func printMonthEnd(w io.Writer, runs []*monthEndRun) {
	o := runs[0].opts
	fmt.Fprintf(w, "\nMonth-end at the hub: %d partners send interactive calls (%g/s each, ~%v); at %v %d others re-send\n"+
		"%d documents each (weights 1/2/4/8, ~%v); the hub runs %d units at once, each partner %d calls.\n"+
		"budget: interactive class first with %d units of headroom, batch class with a share of %d, MaxBypass %d.\n"+
		"no budget: the partners' bulkheads only, the hub's units taken in arrival order (what a hub has today).\n\n",
		o.interactive, o.rate, o.median, o.burstAt, o.batch, o.docs, o.docMedian, o.size, o.partnerCap, o.headroom, o.share, o.maxBypass)
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(label string, f func(r *monthEndRun) string) {
		fmt.Fprintf(tw, "%-34s\t", label)
		for _, r := range runs {
			fmt.Fprint(tw, f(r)+"\t")
		}
		fmt.Fprintln(tw)
	}
	row("", func(r *monthEndRun) string { return r.name() })
	row("interactive p99 before the burst", func(r *monthEndRun) string { return ms(r.before.quantile(0.99)) })
	row("interactive p99 during the burst", func(r *monthEndRun) string { return ms(r.burstLatency().quantile(0.99)) })
	row("  ÷ before", func(r *monthEndRun) string { return fmt.Sprintf("%.2fx", r.p99Ratio()) })
	row("interactive p50 during the burst", func(r *monthEndRun) string { return ms(r.burstLatency().quantile(0.50)) })
	row("interactive calls rejected", func(r *monthEndRun) string {
		return fmt.Sprintf("%d of %d", r.rejected.Load(), r.interactive.Load())
	})
	row("hub utilisation while calls wait", func(r *monthEndRun) string {
		u, n := r.busyUtilisation()
		if n == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", u)
	})
	row("wait in the hub p99, interactive", func(r *monthEndRun) string { return ms(r.hubWait[0].quantile(0.99)) })
	row("wait in the hub p99, batch", func(r *monthEndRun) string { return ms(r.hubWait[1].quantile(0.99)) })
	row("documents done / rejected", func(r *monthEndRun) string {
		return fmt.Sprintf("%d / %d", r.docsDone.Load(), r.docsRejected.Load())
	})
	row("last document ended at", func(r *monthEndRun) string {
		return time.Duration(r.batchEnd.Load()).Round(10 * time.Millisecond).String()
	})
	tw.Flush()
	for line := range strings.Lines(table.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
	fmt.Fprintf(w, "\n\"during the burst\": interactive calls that arrived between the burst and the last document's end.\n")
	for _, r := range runs {
		if r.maxStall > stallWarning {
			fmt.Fprintf(w, "\nnote: the month-end run %s was starved of CPU for up to %v (a busy machine): calls arrived late\n"+
				"      and ended late then, so its latencies include that stall.\n", r.name(), r.maxStall.Round(time.Millisecond))
		}
	}
}

// p99Ratio is the interactive p99 during the burst over its value before.
func (r *monthEndRun) p99Ratio() float64 {
	before := r.before.quantile(0.99)
	if before == 0 {
		return math.NaN()
	}
	return float64(r.burstLatency().quantile(0.99)) / float64(before)
}

var (
	interactiveColor = color.RGBA{31, 119, 180, 255}
	batchColor       = color.RGBA{255, 127, 14, 255}
)

// drawMonthEnd writes a PNG with three panels sharing the time axis: the
// interactive calls' p99 latency (log scale), the hub's utilisation, and
// the p99 wait in the hub of each class (log scale). Solid lines are the
// run with the budget, dashed lines the run without.
func drawMonthEnd(w io.Writer, runs []*monthEndRun) error {
	const h = 760
	img := image.NewRGBA(image.Rect(0, 0, chartW, h))
	draw.Draw(img, img.Bounds(), &image.Uniform{white}, image.Point{}, draw.Src)
	o := runs[0].opts
	tmax := o.duration.Seconds()
	for _, r := range runs {
		tmax = max(tmax, math.Ceil(time.Duration(r.batchEnd.Load()).Seconds()*2)/2)
	}
	drawText(img, left, 12, "EDI hub at month-end, with and without a budget", 2, ink)

	logPanel := func(y0 int, title string) *panel {
		p := &panel{img: img, x0: left, y0: y0, w: chartW - left - right, h: 170, tmax: tmax, ymin: 0, ymax: 4, log: true}
		for e := 0; e <= 4; e++ {
			v := math.Pow(10, float64(e))
			y := p.py(v)
			hline(img, p.x0, p.x0+p.w, y, grid)
			label := fmt.Sprintf("%gms", v)
			if v >= 1000 {
				label = fmt.Sprintf("%gs", v/1000)
			}
			drawText(img, p.x0-textWidth(label, 1)-6, y-3, label, 1, ink)
		}
		drawText(img, p.x0, p.y0-14, title, 1, ink)
		return p
	}
	lat := logPanel(60, "interactive p99 latency (call arrived - call ended)")
	util := &panel{img: img, x0: left, y0: 290, w: lat.w, h: 170, tmax: tmax, ymin: 0, ymax: 1}
	for k := 0; k <= 4; k++ {
		v := float64(k) / 4
		y := util.py(v)
		hline(img, util.x0, util.x0+util.w, y, grid)
		label := fmt.Sprintf("%g", v)
		drawText(img, util.x0-textWidth(label, 1)-6, y-3, label, 1, ink)
	}
	drawText(img, util.x0, util.y0-14, "hub utilisation (units in use / units)", 1, ink)
	wait := logPanel(520, "p99 wait in the hub, by class (no wait: at the bottom)")

	for t := 0.0; t <= tmax+1e-9; t += 0.5 {
		x := wait.px(t)
		label := fmt.Sprintf("%gs", t)
		drawText(img, x-textWidth(label, 1)/2, wait.y0+wait.h+8, label, 1, ink)
	}
	for _, p := range []*panel{lat, util, wait} {
		x := p.px(o.burstAt.Seconds())
		dashedV(img, x, p.y0, p.y0+p.h, markColor)
		hline(img, p.x0, p.x0+p.w, p.y0+p.h, ink)
		vline(img, p.x0, p.y0, p.y0+p.h, ink)
	}
	drawText(img, lat.px(o.burstAt.Seconds())+4, lat.y0+4, "month-end burst", 1, markColor)

	quantilePoints := func(hs []histogram) [][2]float64 {
		var pts [][2]float64
		for i := range hs {
			if q := hs[i].quantile(0.99); q > 0 {
				pts = append(pts, [2]float64{(float64(i) + 0.5) * o.bin.Seconds(), float64(q) / float64(time.Millisecond)})
			}
		}
		return pts
	}
	for k, r := range runs {
		dashed := k > 0
		polyline(lat, quantilePoints(r.latency), interactiveColor, dashed)
		polyline(wait, quantilePoints(r.waitT[0]), interactiveColor, dashed)
		polyline(wait, quantilePoints(r.waitT[1]), batchColor, dashed)
		r.mu.Lock()
		var pts [][2]float64
		for i, u := range r.utilisation {
			pts = append(pts, [2]float64{float64(i+1) * r.sampleEvery.Seconds(), u})
		}
		r.mu.Unlock()
		polyline(util, pts, ink, dashed)
	}

	ly := h - 26
	x := left
	legendEntry(img, &x, ly, "interactive", interactiveColor, false)
	legendEntry(img, &x, ly, "batch documents", batchColor, false)
	legendEntry(img, &x, ly, "hub", ink, false)
	legendEntry(img, &x, ly, runs[0].name(), markColor, false)
	if len(runs) > 1 {
		legendEntry(img, &x, ly, runs[1].name(), markColor, true)
	}
	return png.Encode(w, img)
}
