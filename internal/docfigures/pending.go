package docfigures

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PendingRow is one pipeline's row of the README's table of what one call
// waiting for its permit costs.
type PendingRow struct {
	// Goroutines is the goroutines one waiting call holds.
	Goroutines int
	// Bytes is the bytes one waiting call holds (a KB is 1,000 B).
	Bytes float64
	// About reports that the table gives Bytes as an approximation
	// ("about 750"): the figure varies between runs.
	About bool
}

// heading starts the paragraph the table follows.
const heading = "What one call waiting for its permit costs"

// PendingTable returns the rows of that table in the README at path, keyed
// by the first cell as the README writes it (backquotes included). It
// fails if the table is missing or a row's cells do not parse.
func PendingTable(path string) (map[string]PendingRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows := map[string]PendingRow{}
	in := false // after the heading, before the end of the table
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, heading):
			in = true
		case !in, !strings.HasPrefix(line, "|"):
			if in && len(rows) > 0 {
				return rows, nil // the table ended
			}
		default:
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) != 3 {
				return nil, fmt.Errorf("%s: a row of the pending-cost table has %d cells, want 3: %q", path, len(cells), line)
			}
			name := strings.TrimSpace(cells[0])
			if name == "pipeline" || strings.HasPrefix(name, "---") {
				continue
			}
			r, err := parseRow(cells[1], cells[2])
			if err != nil {
				return nil, fmt.Errorf("%s: row %s: %w", path, name, err)
			}
			rows[name] = r
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no table after %q", path, heading)
	}
	return rows, nil
}

// parseRow parses a row's goroutines ("0", "1 (rxgo's own Map)") and bytes
// ("112", "about 750", "about 3.9 KB (mostly its stack)").
func parseRow(goroutines, bytes string) (PendingRow, error) {
	var r PendingRow
	g, _, _ := strings.Cut(strings.TrimSpace(goroutines), " ")
	n, err := strconv.Atoi(g)
	if err != nil {
		return r, fmt.Errorf("goroutines %q: %w", strings.TrimSpace(goroutines), err)
	}
	r.Goroutines = n
	b := strings.TrimSpace(bytes)
	if rest, ok := strings.CutPrefix(b, "about "); ok {
		r.About, b = true, rest
	}
	if i := strings.Index(b, " ("); i >= 0 {
		b = b[:i]
	}
	unit := 1.0
	if rest, ok := strings.CutSuffix(b, " KB"); ok {
		unit, b = 1000, rest
	}
	v, err := strconv.ParseFloat(b, 64)
	if err != nil {
		return r, fmt.Errorf("bytes %q: %w", strings.TrimSpace(bytes), err)
	}
	r.Bytes = v * unit
	return r, nil
}

// Check reports how a measured cost disagrees with the row (empty: it
// agrees). The goroutines must be equal. The bytes of a row without a
// goroutine must be within 1 % (or 4 B) of the measured ones, within 5 %
// for an approximate row; the bytes of a row with goroutines are not
// checked: stacks vary with the run and the race detector.
func (r PendingRow) Check(goroutines, bytes float64) string {
	if goroutines != float64(r.Goroutines) {
		return fmt.Sprintf("%.2f goroutines per waiting call, the README says %d", goroutines, r.Goroutines)
	}
	if r.Goroutines > 0 {
		return ""
	}
	tol := max(4, 0.01*r.Bytes)
	if r.About {
		tol = 0.05 * r.Bytes
	}
	if d := bytes - r.Bytes; d > tol || d < -tol {
		return fmt.Sprintf("%.1f B per waiting call, the README says %g B (±%.0f B)", bytes, r.Bytes, tol)
	}
	return ""
}
