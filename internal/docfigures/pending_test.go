package docfigures

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const table = `# x

What one call waiting for its permit costs, per pipeline (measured):

| pipeline | goroutines per waiting call | bytes per waiting call |
|---|---:|---:|
| ` + "`a`" + ` | 0 | 112 |
| ` + "`b`" + ` | 0 | about 750 |
| ` + "`c`" + ` | 1 (its own) | about 3.9 KB (mostly its stack) |

| other | table |
|---|---|
| x | y |
`

func TestPendingTableParsesEveryRowOfThePendingTableAndStopsAtItsEnd(t *testing.T) {
	rows, err := PendingTable(write(t, table))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]PendingRow{"`a`": {0, 112, false}, "`b`": {0, 750, true}, "`c`": {1, 3900, true}}
	if len(rows) != len(want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
	for k, w := range want {
		if rows[k] != w {
			t.Errorf("row %s: %+v, want %+v", k, rows[k], w)
		}
	}
}

func TestPendingTableFailsNamingTheRowThatDoesNotParse(t *testing.T) {
	_, err := PendingTable(write(t, strings.Replace(table, "about 750", "seven hundred", 1)))
	if err == nil || !strings.Contains(err.Error(), "row `b`") {
		t.Fatalf("err %v, want one naming row `b`", err)
	}
	if _, err := PendingTable(write(t, "# no table\n")); err == nil {
		t.Fatal("a README without the table read without error")
	}
}

func TestCheckHoldsWithinTheToleranceAndNamesTheGapBeyondIt(t *testing.T) {
	exact, about, busy := PendingRow{0, 112, false}, PendingRow{0, 750, true}, PendingRow{1, 3900, true}
	for _, c := range []struct {
		name       string
		r          PendingRow
		g, b       float64
		wantAgrees bool
	}{
		{"exact, equal", exact, 0, 112, true},
		{"exact, 4 B off", exact, 0, 116, true},
		{"exact, 16 B off", exact, 0, 128, false},
		{"about, 3 % off", about, 0, 772, true},
		{"about, 7 % off", about, 0, 803, false},
		{"a goroutine more", exact, 1, 112, false},
		{"goroutine row, any bytes", busy, 1, 5272, true},
		{"goroutine row, no goroutine", busy, 0, 3900, false},
	} {
		if got := c.r.Check(c.g, c.b); (got == "") != c.wantAgrees {
			t.Errorf("%s: Check = %q", c.name, got)
		}
	}
}
