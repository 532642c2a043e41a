package prometheus_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/rxbulkhead/bulkhead"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// gather returns the metric families of c by name.
func gather(t *testing.T, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// find returns the metric of family mf whose labels include every pair of
// labels ("k=v").
func find(t *testing.T, mf *dto.MetricFamily, labels ...string) *dto.Metric {
	t.Helper()
next:
	for _, m := range mf.GetMetric() {
		for _, want := range labels {
			k, v, _ := strings.Cut(want, "=")
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		return m
	}
	t.Fatalf("%s has no series %v", mf.GetName(), labels)
	return nil
}

// buckets returns the cumulative counts of h by upper bound.
func buckets(h *dto.Histogram) map[float64]uint64 {
	out := map[float64]uint64{}
	for _, b := range h.GetBucket() {
		out[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	return out
}

func TestWaitHistogramPutsEachQueuedCallInTheBucketOfItsWait(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 300 * time.Millisecond, MaxQueuedCalls: 2},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	s := mustBulkhead(t, r, "acme")
	c := bulkheadprom.NewCollector(r, bulkheadprom.WithWaitBuckets(time.Millisecond, 100*time.Millisecond, time.Second))
	defer c.Close()

	s.TryAcquirePermission()              // granted at once: wait 0
	a := s.AcquirePermissionAsync()       // queued
	b := s.AcquirePermissionAsync()       // queued
	full := s.AcquirePermissionAsync()    // QueueFull
	clock.Advance(50 * time.Millisecond)  //
	s.FinishCall()                        // a granted after 50 ms
	clock.Advance(250 * time.Millisecond) // b times out after 300 ms
	if a.Err() != nil || b.Err() == nil || full.Err() == nil {
		t.Fatalf("outcomes: %v %v %v", a.Err(), b.Err(), full.Err())
	}
	s.FinishCall()
	s.TryAcquirePermission()
	if s.TryAcquirePermission() { // NoWait
		t.Fatal("second permit")
	}
	s.FinishCall()

	mfs := gather(t, c)
	wait := mfs["bulkhead_wait_duration_seconds"]
	granted := find(t, wait, "name=acme", "outcome=granted").GetHistogram()
	if got, want := buckets(granted), map[float64]uint64{0.001: 2, 0.1: 3, 1: 3}; !equal(got, want) {
		t.Errorf("granted buckets %v, want %v", got, want)
	}
	if granted.GetSampleCount() != 3 || !near(granted.GetSampleSum(), 0.05) {
		t.Errorf("granted count %d sum %v, want 3 and 0.05", granted.GetSampleCount(), granted.GetSampleSum())
	}
	rejected := find(t, wait, "name=acme", "outcome=rejected").GetHistogram()
	if got, want := buckets(rejected), map[float64]uint64{0.001: 2, 0.1: 2, 1: 3}; !equal(got, want) {
		t.Errorf("rejected buckets %v, want %v", got, want)
	}
	if rejected.GetSampleCount() != 3 || !near(rejected.GetSampleSum(), 0.3) {
		t.Errorf("rejected count %d sum %v, want 3 and 0.3", rejected.GetSampleCount(), rejected.GetSampleSum())
	}
	rej := mfs["bulkhead_rejected_calls_total"]
	for reason, want := range map[string]float64{"no_wait": 1, "queue_full": 1, "wait_timeout": 1, "evicted": 0} {
		if got := find(t, rej, "name=acme", "reason="+reason).GetCounter().GetValue(); got != want {
			t.Errorf("rejections %s = %v, want %v", reason, got, want)
		}
	}
}

func TestWaitStatsOfAnEvictedBulkheadAreForgotten(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)), bulkhead.WithIdleTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	c := bulkheadprom.NewCollector(r)
	defer c.Close()
	acquire := func() {
		a, l := r.AcquirePermissionAsync("tenant", bulkhead.CallOptions{})
		if a.Err() != nil {
			t.Fatal(a.Err())
		}
		if a2, _ := r.AcquirePermissionAsync("tenant", bulkhead.CallOptions{}); a2.Err() == nil {
			t.Fatal("second permit")
		}
		l.FinishCall()
	}
	acquire()
	clock.Advance(2 * time.Second) // evicted
	if _, ok := gather(t, c)["bulkhead_wait_duration_seconds"]; ok {
		t.Fatal("the evicted bulkhead still has a wait series")
	}
	acquire()
	mfs := gather(t, c)
	if n := find(t, mfs["bulkhead_wait_duration_seconds"], "name=tenant", "outcome=granted").GetHistogram().GetSampleCount(); n != 1 {
		t.Errorf("re-created bulkhead's granted count = %d, want 1 (from zero)", n)
	}
	if n := find(t, mfs["bulkhead_rejected_calls_total"], "name=tenant", "reason=no_wait").GetCounter().GetValue(); n != 1 {
		t.Errorf("re-created bulkhead's no_wait count = %v, want 1 (from zero)", n)
	}
}

func TestResilience4jNamesExportTheGaugesAgain(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 3})
	s := mustBulkhead(t, r, "legacy")
	c := bulkheadprom.NewCollector(r, bulkheadprom.WithResilience4jNames())
	defer c.Close()
	s.TryAcquirePermission()
	defer s.FinishCall()
	want := `
# HELP resilience4j_bulkhead_available_concurrent_calls The number of available permissions
# TYPE resilience4j_bulkhead_available_concurrent_calls gauge
resilience4j_bulkhead_available_concurrent_calls{name="legacy"} 2
# HELP resilience4j_bulkhead_max_allowed_concurrent_calls The maximum number of available permissions
# TYPE resilience4j_bulkhead_max_allowed_concurrent_calls gauge
resilience4j_bulkhead_max_allowed_concurrent_calls{name="legacy"} 3
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"resilience4j_bulkhead_available_concurrent_calls", "resilience4j_bulkhead_max_allowed_concurrent_calls"); err != nil {
		t.Fatal(err)
	}
	plain := bulkheadprom.NewCollector(r)
	defer plain.Close()
	if _, ok := gather(t, plain)["resilience4j_bulkhead_available_concurrent_calls"]; ok {
		t.Fatal("resilience4j names exported without the option")
	}
}

func TestNewCollectorRefusesBadWaitBuckets(t *testing.T) {
	r := newRegistry(t, bulkhead.DefaultConfig())
	for name, bounds := range map[string][]time.Duration{
		"none":       nil,
		"zero":       {0, time.Second},
		"decreasing": {time.Second, time.Millisecond},
		"equal":      {time.Second, time.Second},
	} {
		func() {
			defer func() {
				p, _ := recover().(string)
				if !strings.Contains(p, "WithWaitBuckets") {
					t.Errorf("%s: panic %q, want one naming WithWaitBuckets", name, p)
				}
			}()
			bulkheadprom.NewCollector(r, bulkheadprom.WithWaitBuckets(bounds...)).Close()
		}()
	}
}

func TestDefaultWaitBucketsSpanSubMillisecondToSeconds(t *testing.T) {
	b := bulkheadprom.DefaultWaitBuckets()
	if b[0] >= time.Millisecond || b[len(b)-1] < 5*time.Second {
		t.Fatalf("default buckets %v", b)
	}
	b[0] = time.Hour // a copy: the defaults stay
	if bulkheadprom.DefaultWaitBuckets()[0] == time.Hour {
		t.Fatal("DefaultWaitBuckets returned the package's own slice")
	}
}

func equal(a, b map[float64]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestShadowedCallsAreCountedByWhatWouldHaveHappened(t *testing.T) {
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1},
		bulkhead.WithConfig("trial", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: 1, ShadowMode: true}))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	enforced := mustBulkhead(t, r, "enforced")
	trial, err := r.GetWithConfig("trial", "trial")
	if err != nil {
		t.Fatal(err)
	}
	c := bulkheadprom.NewCollector(r)
	defer c.Close()
	if _, ok := gather(t, c)["bulkhead_shadowed_calls_total"]; !ok {
		t.Fatal("no shadow series for a bulkhead in shadow mode before its first shadowed call")
	}
	trial.TryAcquirePermission()                                 // granted
	trial.TryAcquirePermission()                                 // would have been rejected: no_wait
	if err := trial.AcquirePermissionAsync().Err(); err != nil { // 1 would-be waiter, the queue holds 1: queue_full
		t.Fatal(err)
	}
	for range 3 {
		trial.FinishCall()
	}
	mfs := gather(t, c)
	sh := mfs["bulkhead_shadowed_calls_total"]
	for reason, want := range map[string]float64{"would_wait": 0, "no_wait": 1, "queue_full": 1, "evicted": 0} {
		if got := find(t, sh, "name=trial", "reason="+reason).GetCounter().GetValue(); got != want {
			t.Errorf("shadowed %s = %v, want %v", reason, got, want)
		}
	}
	for _, m := range sh.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" && l.GetValue() == enforced.Name() {
				t.Error("shadow series for a bulkhead that never was in shadow mode")
			}
			if l.GetName() == "reason" && l.GetValue() == "wait_timeout" {
				t.Error("a wait_timeout shadow series: shadow mode never predicts one")
			}
		}
	}
	if got := find(t, mfs["bulkhead_rejected_calls_total"], "name=trial", "reason=no_wait").GetCounter().GetValue(); got != 0 {
		t.Errorf("a shadowed call counted as rejected: %v", got)
	}
	if got := find(t, mfs["bulkhead_calls_total"], "name=trial", "kind=permitted").GetCounter().GetValue(); got != 3 {
		t.Errorf("permitted = %v, want 3 (shadow mode lets every call through)", got)
	}
}
