package bulkheadhttp_test

import (
	"slices"
	"testing"

	"github.com/rxbulkhead/bulkhead/internal/docfigures"
)

// TestTheREADMEsCostOfAWaitingGoRequestIsTheMeasuredOne measures a request
// waiting in Transport.Go as BenchmarkPendingClientRequests does and checks
// the README's row (bench/pending checks the other rows): no goroutine, and
// the bytes within docfigures.PendingRow.Check's tolerance (the median of three
// batches).
func TestTheREADMEsCostOfAWaitingGoRequestIsTheMeasuredOne(t *testing.T) {
	rows, err := docfigures.PendingTable("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const name = "`bulkheadhttp.Transport.Go`"
	row, ok := rows[name]
	if !ok {
		t.Fatalf("no README row %s", name)
	}
	const n = 1000
	var g float64
	bytes := make([]float64, 3)
	for i := range bytes {
		before, after := pendingClientCost(t, true, n)
		g = float64(after.goroutines-before.goroutines) / n
		bytes[i] = float64(int64(after.heap+after.stackMem)-int64(before.heap+before.stackMem)) / n
	}
	slices.Sort(bytes)
	t.Logf("%.2f goroutines, %.1f B per waiting request (of %v)", g, bytes[1], bytes)
	if msg := row.Check(g, bytes[1]); msg != "" {
		t.Error(msg)
	}
}
