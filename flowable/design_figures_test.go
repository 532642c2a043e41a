package flowable_test

import (
	"regexp"
	"runtime"
	"testing"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/internal/docfigures"
)

// TestDesignMdSaysWhatAPendingSubscriptionCosts checks docs/design.md's
// cost of a pending flowable subscription ("... closure: N B and G
// goroutines") against what BenchmarkPendingSubscriptions100k measures,
// with 30,000 subscriptions pending: the goroutines exactly, the bytes
// within 1 % (or 4 B). It fails on the page as it was before 1caf56a
// (288 B, for 304).
func TestDesignMdSaysWhatAPendingSubscriptionCosts(t *testing.T) {
	doc, err := docfigures.Find("../docs/design.md", regexp.MustCompile(`closure: (\d+) B and (\d+) goroutines`))
	if err != nil {
		t.Fatal(err)
	}
	docBytes, docGoroutines := doc[0], int(doc[1])

	const n = 30_000
	bh, err := bulkhead.New("figures", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	if err != nil {
		t.Fatal(err)
	}
	bh.TryAcquirePermission()
	p := flowable.Bulkhead(bh, flowable.Just(1))
	sinks := make([]sink, n)
	g0, h0 := runtime.NumGoroutine(), liveHeap()
	for i := range sinks {
		p.Subscribe(&sinks[i])
	}
	h1, g1 := liveHeap(), runtime.NumGoroutine()
	if q := bh.Metrics().QueuedCalls; q != n {
		t.Fatalf("%d subscriptions pending, want %d", q, n)
	}
	for i := range sinks {
		sinks[i].sub.Cancel()
	}
	bh.ReleasePermission()
	if m := bh.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
		t.Fatalf("permits left: %+v", m)
	}
	bytes, goroutines := float64(h1-h0)/n, g1-g0
	t.Logf("%.1f B and %d goroutines per pending subscription (design.md: %g B, %d)", bytes, goroutines, docBytes, docGoroutines)
	if goroutines != docGoroutines {
		t.Errorf("%d goroutines for %d pending subscriptions, design.md says %d", goroutines, n, docGoroutines)
	}
	if tol := max(4, 0.01*docBytes); bytes-docBytes > tol || docBytes-bytes > tol {
		t.Errorf("%.1f B per pending subscription, design.md says %g B (±%.0f B)", bytes, docBytes, tol)
	}
}
