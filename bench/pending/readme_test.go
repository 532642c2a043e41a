package pending_test

import (
	"slices"
	"testing"

	"github.com/rxbulkhead/bulkhead/internal/docfigures"
)

// readmeRow is the row of the README's pending-cost table each kind is
// measured for (bulkheadhttp checks its own row).
var readmeRow = map[string]string{
	"AcquirePermissionAsync": "`Semaphore.AcquirePermissionAsync`",
	"flowable":               "`flowable.Bulkhead`",
	"observable":             "`observable` / `single` / `maybe` `.Bulkhead(...).Observe`",
	"single":                 "`observable` / `single` / `maybe` `.Bulkhead(...).Observe`",
	"maybe":                  "`observable` / `single` / `maybe` `.Bulkhead(...).Observe`",
	"observable+Map":         "rxgo operators chained after the bulkhead (`.Map(f)`)",
	"completable":            "`completable.Bulkhead`",
	"ro":                     "`contrib/ro` `Bulkhead`",
	"iterator":               "`iterate.Seq`, `bulkheadhttp.Transport` with `client.Do`",
}

// TestTheREADMEsCostOfAWaitingCallIsTheMeasuredOne measures every kind as
// BenchmarkPending does and checks the README's table against it: the
// goroutines exactly, the bytes of a pipeline that holds no goroutine
// within docfigures.PendingRow.Check's tolerance. A change that makes a waiting
// call heavier or lighter fails here until the README says so.
func TestTheREADMEsCostOfAWaitingCallIsTheMeasuredOne(t *testing.T) {
	rows, err := docfigures.PendingTable("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds() {
		t.Run(k.name, func(t *testing.T) {
			row, ok := rows[readmeRow[k.name]]
			if !ok {
				t.Fatalf("no README row %q for %s", readmeRow[k.name], k.name)
			}
			// A pipeline with goroutines is checked for their number only,
			// which 1,000 calls show. The bytes of an exact row are the
			// median of three batches: a batch's figure moves by a few
			// bytes with what the runtime frees meanwhile.
			runs, calls := 1, 1000
			switch {
			case row.Goroutines == 0 && !row.About:
				runs, calls = 3, 10_000
			case row.Goroutines == 0:
				calls = 10_000
			}
			var g float64
			bytes := make([]float64, runs)
			for i := range bytes {
				s := full(t)
				var end func()
				g, bytes[i], end = footprint(t, k.build(s), s, make([]func(), calls), func(bool) {})
				end()
				if row.Goroutines == 0 && g != 0 {
					break // Check names it
				}
			}
			slices.Sort(bytes)
			t.Logf("%s: %.2f goroutines, %.1f B per waiting call (of %v)", k.name, g, bytes[runs/2], bytes)
			if msg := row.Check(g, bytes[runs/2]); msg != "" {
				t.Errorf("%s: %s", k.name, msg)
			}
		})
	}
}
