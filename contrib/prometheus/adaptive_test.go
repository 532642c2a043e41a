package prometheus_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestAdaptiveCollectorReportsLimitEstimateAndRTT(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, reg)
	ar, err := adaptive.NewRegistry(reg, adaptive.Config{Algorithm: func() adaptive.Algorithm { return &adaptive.AIMD{} }}, adaptive.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	walmart, _ := ar.Get("walmart")
	_, _ = ar.Get("target")
	var calls []adaptive.Call
	for range 10 {
		c, _ := walmart.TryAcquire()
		calls = append(calls, c)
	}
	clock.Advance(250 * time.Millisecond)
	for _, c := range calls {
		c.Finish(nil) // every permit used: AIMD adds one
	}
	want := `
# HELP bulkhead_adaptive_at_floor 1 while the adaptive limit sits at its floor, else 0.
# TYPE bulkhead_adaptive_at_floor gauge
bulkhead_adaptive_at_floor{name="target"} 0
bulkhead_adaptive_at_floor{name="walmart"} 0
# HELP bulkhead_adaptive_estimate Limit the algorithm estimated last, before floor, ceiling and smoothing.
# TYPE bulkhead_adaptive_estimate gauge
bulkhead_adaptive_estimate{name="target"} 10
bulkhead_adaptive_estimate{name="walmart"} 11
# HELP bulkhead_adaptive_floor_seconds_total Time the adaptive limit spent at its floor.
# TYPE bulkhead_adaptive_floor_seconds_total counter
bulkhead_adaptive_floor_seconds_total{name="target"} 0
bulkhead_adaptive_floor_seconds_total{name="walmart"} 0
# HELP bulkhead_adaptive_limit Concurrency limit the adaptive controller applied last.
# TYPE bulkhead_adaptive_limit gauge
bulkhead_adaptive_limit{name="target"} 10
bulkhead_adaptive_limit{name="walmart"} 11
# HELP bulkhead_adaptive_rtt_seconds Mean round-trip time of the calls of the last window.
# TYPE bulkhead_adaptive_rtt_seconds gauge
bulkhead_adaptive_rtt_seconds{name="target"} 0
bulkhead_adaptive_rtt_seconds{name="walmart"} 0.25
`
	if err := testutil.CollectAndCompare(bulkheadprom.NewAdaptiveCollector(ar), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestAdaptiveCollectorReportsTheTimeAtTheFloor(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 2}, bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, reg)
	ar, err := adaptive.NewRegistry(reg, adaptive.Config{Min: 2}, adaptive.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = ar.Get("walmart") // starts at its floor of 2
	clock.Advance(3 * time.Second)
	want := `
# HELP bulkhead_adaptive_at_floor 1 while the adaptive limit sits at its floor, else 0.
# TYPE bulkhead_adaptive_at_floor gauge
bulkhead_adaptive_at_floor{name="walmart"} 1
# HELP bulkhead_adaptive_floor_seconds_total Time the adaptive limit spent at its floor.
# TYPE bulkhead_adaptive_floor_seconds_total counter
bulkhead_adaptive_floor_seconds_total{name="walmart"} 3
`
	if err := testutil.CollectAndCompare(bulkheadprom.NewAdaptiveCollector(ar), strings.NewReader(want),
		"bulkhead_adaptive_at_floor", "bulkhead_adaptive_floor_seconds_total"); err != nil {
		t.Error(err)
	}
}
