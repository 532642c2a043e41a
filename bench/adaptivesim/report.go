package adaptivesim

import (
	"fmt"
	"strings"
	"time"
)

// never is how a convergence that did not happen sorts (see Summarize).
const never = time.Duration(1 << 62)

func fmtConverge(d time.Duration) string {
	if d >= never {
		return "never"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// missed lists the goals g misses, by letter: c converge, r rejected at
// load < C, g goodput, p p99, f floor.
func missed(g Goals) string {
	var b strings.Builder
	for _, m := range []struct {
		ok bool
		c  string
	}{{g.Converge, "c"}, {g.Rejected, "r"}, {g.Goodput, "g"}, {g.P99, "p"}, {g.Floor, "f"}} {
		if !m.ok {
			b.WriteString(m.c)
		}
	}
	return b.String()
}

// SummaryTable sums up each contender over the whole matrix: the cells in
// which every seed met every goal, the cells that miss each goal, and the
// worst seed of any cell for each figure.
func SummaryTable(results []CellResult, names []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| limiter | cells, every seed meets every goal | misses convergence | misses rejected = 0 | misses goodput | misses p99 | misses floor | worst goodput | worst p99 | longest at floor |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, name := range names {
		var all, c, r, g, p, f int
		worstG, worstP := 10.0, 0.0
		var worstF time.Duration
		for _, cr := range results {
			s := cr.Summarize(name)
			if s.Goals.All() {
				all++
			}
			c += b2i(!s.Goals.Converge)
			r += b2i(!s.Goals.Rejected)
			g += b2i(!s.Goals.Goodput)
			p += b2i(!s.Goals.P99)
			f += b2i(!s.Goals.Floor)
			worstG = min(worstG, s.GoodputWorst)
			worstP = max(worstP, s.P99Worst)
			worstF = max(worstF, s.FloorWorst)
		}
		fmt.Fprintf(&b, "| %s | %d / %d | %d | %d | %d | %d | %d | %.2fx | %.2fx | %.1f s |\n",
			name, all, len(results), c, r, g, p, f, worstG, worstP, worstF.Seconds())
	}
	return b.String()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CellTable is one contender's figures cell by cell, worst seed and
// median.
func CellTable(results []CellResult, name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| cell | seeds meeting every goal | converge worst / median | goodput worst / median | p99 worst / median | rejected at load < C, worst | at floor, worst | goals missed |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, cr := range results {
		s := cr.Summarize(name)
		fmt.Fprintf(&b, "| %s | %d / %d | %s / %s | %.2fx / %.2fx | %.2fx / %.2fx | %d | %.1f s | %s |\n",
			cr.Cell, s.Met, s.Seeds, fmtConverge(s.ConvergeWorst), fmtConverge(s.ConvergeMedian),
			s.GoodputWorst, s.GoodputMedian, s.P99Worst, s.P99Median, s.RejectedWorst, s.FloorWorst.Seconds(), missed(s.Goals))
	}
	return b.String()
}

// ComparisonTable shows, cell by cell, each contender's worst-seed goodput
// and the goals some seed missed.
func ComparisonTable(results []CellResult, names []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| cell | best static | %s |\n", strings.Join(names, " | "))
	fmt.Fprintf(&b, "|---|---:|%s\n", strings.Repeat("---|", len(names)))
	for _, cr := range results {
		var cols []string
		for _, name := range names {
			s := cr.Summarize(name)
			m := missed(s.Goals)
			if m == "" {
				m = "✓"
			}
			cols = append(cols, fmt.Sprintf("%.2fx %s", s.GoodputWorst, m))
		}
		fmt.Fprintf(&b, "| %s | %d | %s |\n", cr.Cell, cr.BestStatic, strings.Join(cols, " | "))
	}
	return b.String()
}
