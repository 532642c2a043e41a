package prometheus_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rxbulkhead/bulkhead"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Promise (Collector): "A bulkhead evicted as idle ... disappears from the
// next scrape and its counts are forgotten ...: one created again under its
// name counts from zero", and "A Collector is safe for concurrent use".
// Scrapes (each with a Describe, as a pedantic registry checks them
// against each other) race with keyed calls and with the sweeps that evict
// their bulkheads: every scrape succeeds, and once the calls stop and the
// sweeps have evicted everything no series of a gone bulkhead is left; a
// bulkhead made again under an evicted name counts its own call only.
func TestHostileScrapesRacingEvictionsLeaveNoSeriesOfAGoneBulkhead(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)), bulkhead.WithIdleTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	c := bulkheadprom.NewCollector(r)
	defer c.Close()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := reg.Gather(); err != nil {
				t.Errorf("Gather: %v", err)
				return
			}
		}
	})
	for i := range 200 {
		a, l := r.AcquirePermissionAsync(fmt.Sprintf("tenant-%d", i%4), bulkhead.CallOptions{})
		if a.Err() != nil {
			t.Fatal(a.Err())
		}
		l.FinishCall()
		clock.Advance(700 * time.Millisecond) // a sweep every 500 ms evicts the keys idle for a second
	}
	close(done)
	wg.Wait()
	if st := r.Stats(); st.Evictions == 0 {
		t.Fatal("no eviction: the test raced nothing")
	}

	clock.Advance(3 * time.Second) // every key evicted
	mfs := gather(t, c)
	for _, family := range []string{"bulkhead_available_concurrent_calls", "bulkhead_calls_total",
		"bulkhead_wait_duration_seconds", "bulkhead_rejected_calls_total"} {
		if mf, ok := mfs[family]; ok {
			t.Errorf("%s: %d series left after every bulkhead was evicted", family, len(mf.GetMetric()))
		}
	}
	if n := mfs["bulkhead_registry_bulkheads"].GetMetric()[0].GetGauge().GetValue(); n != 0 {
		t.Errorf("bulkhead_registry_bulkheads = %v, want 0", n)
	}

	a, l := r.AcquirePermissionAsync("tenant-0", bulkhead.CallOptions{})
	if a.Err() != nil {
		t.Fatal(a.Err())
	}
	l.FinishCall()
	mfs = gather(t, c)
	for kind, want := range map[string]float64{"permitted": 1, "finished": 1, "rejected": 0} {
		if got := find(t, mfs["bulkhead_calls_total"], "name=tenant-0", "kind="+kind).GetCounter().GetValue(); got != want {
			t.Errorf("re-made tenant-0: %s = %v, want %v (from zero)", kind, got, want)
		}
	}
}
