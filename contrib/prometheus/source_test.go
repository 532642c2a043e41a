package prometheus_test

import (
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// fleet is a bulkhead.MetricsSource that is not a bulkhead.Registry, as the
// fleet's Registry of contrib/redis is: the test publishes its events,
// evicts its names and sets its state.
type fleet struct {
	mu      sync.Mutex
	metrics map[string]bulkhead.Metrics
	stats   bulkhead.RegistryStats
	events  map[int]func(bulkhead.Event)
	evicts  map[int]func(string)
	next    int
}

func newFleet() *fleet {
	return &fleet{metrics: map[string]bulkhead.Metrics{}, events: map[int]func(bulkhead.Event){}, evicts: map[int]func(string){}}
}

func (f *fleet) OnEvent(fn func(bulkhead.Event)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	id := f.next
	f.events[id] = fn
	return func() { f.mu.Lock(); delete(f.events, id); f.mu.Unlock() }
}

func (f *fleet) OnEvict(fn func(string)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	id := f.next
	f.evicts[id] = fn
	return func() { f.mu.Lock(); delete(f.evicts, id); f.mu.Unlock() }
}

func (f *fleet) Stats() bulkhead.RegistryStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

func (f *fleet) AllMetrics() iter.Seq2[string, bulkhead.Metrics] {
	return func(yield func(string, bulkhead.Metrics) bool) {
		f.mu.Lock()
		names := slices.Sorted(func(y func(string) bool) {
			for n := range f.metrics {
				if !y(n) {
					return
				}
			}
		})
		ms := make([]bulkhead.Metrics, len(names))
		for i, n := range names {
			ms[i] = f.metrics[n]
		}
		f.mu.Unlock()
		for i, n := range names {
			if !yield(n, ms[i]) {
				return
			}
		}
	}
}

func (f *fleet) publish(e bulkhead.Event) {
	f.mu.Lock()
	var fns []func(bulkhead.Event)
	for _, fn := range f.events {
		fns = append(fns, fn)
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn(e)
	}
}

func (f *fleet) evict(name string) {
	f.mu.Lock()
	delete(f.metrics, name)
	f.stats.Bulkheads--
	f.stats.Evictions++
	fns := make([]func(string), 0, len(f.evicts))
	for _, fn := range f.evicts {
		fns = append(fns, fn)
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn(name)
	}
}

func TestCollectorExportsAMetricsSourceThatIsNotARegistry(t *testing.T) {
	f := newFleet()
	f.metrics["partner"] = bulkhead.Metrics{AvailableConcurrentCalls: 3, MaxAllowedConcurrentCalls: 5, InFlightCalls: 2, QueuedCalls: 1, MaxQueuedCalls: 10}
	f.stats = bulkhead.RegistryStats{Bulkheads: 1, CatchAllCalls: 4}
	c := bulkheadprom.NewCollector(f, bulkheadprom.WithWaitBuckets(10*time.Millisecond, time.Second),
		bulkheadprom.WithCallDurationBuckets(100*time.Millisecond, time.Second))
	defer c.Close()
	for _, e := range []bulkhead.Event{
		{Type: bulkhead.CallPermitted, Wait: 20 * time.Millisecond},
		{Type: bulkhead.CallPermitted},
		{Type: bulkhead.CallRejected, Reason: bulkhead.WaitTimeout, Wait: 2 * time.Second},
		{Type: bulkhead.CallFinished, CallDuration: 300 * time.Millisecond},
		{Type: bulkhead.CallFinished}, // a call whose start the fleet did not know
	} {
		e.Name = "partner"
		f.publish(e)
	}
	mfs := gather(t, c)
	for name, want := range map[string]float64{
		"bulkhead_available_concurrent_calls": 3, "bulkhead_max_allowed_concurrent_calls": 5,
		"bulkhead_queued_calls": 1, "bulkhead_max_queued_calls": 10,
	} {
		if got := find(t, mfs[name], "name=partner").GetGauge().GetValue(); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	for kind, want := range map[string]float64{"permitted": 2, "rejected": 1, "finished": 2, "cancelled": 0} {
		if got := find(t, mfs["bulkhead_calls_total"], "name=partner", "kind="+kind).GetCounter().GetValue(); got != want {
			t.Errorf("calls %s = %v, want %v", kind, got, want)
		}
	}
	granted := find(t, mfs["bulkhead_wait_duration_seconds"], "name=partner", "outcome=granted").GetHistogram()
	if got, want := buckets(granted), map[float64]uint64{0.01: 1, 1: 2}; !equal(got, want) || !near(granted.GetSampleSum(), 0.02) {
		t.Errorf("granted waits %v sum %v", got, granted.GetSampleSum())
	}
	ran := find(t, mfs["bulkhead_call_duration_seconds"], "name=partner").GetHistogram()
	if got, want := buckets(ran), map[float64]uint64{0.1: 0, 1: 1}; !equal(got, want) || ran.GetSampleCount() != 1 || !near(ran.GetSampleSum(), 0.3) {
		t.Errorf("call durations %v count %d sum %v", got, ran.GetSampleCount(), ran.GetSampleSum())
	}
	if got := find(t, mfs["bulkhead_rejected_calls_total"], "name=partner", "reason=wait_timeout").GetCounter().GetValue(); got != 1 {
		t.Errorf("wait_timeout = %v, want 1", got)
	}
	if got := mfs["bulkhead_registry_catch_all_calls_total"].GetMetric()[0].GetCounter().GetValue(); got != 4 {
		t.Errorf("catch-all calls = %v, want 4", got)
	}

	// An evicted bulkhead's series go, and its counts with them.
	f.evict("partner")
	if _, ok := gather(t, c)["bulkhead_calls_total"]; ok {
		t.Error("series of an evicted bulkhead")
	}
	f.mu.Lock()
	f.metrics["partner"] = bulkhead.Metrics{MaxAllowedConcurrentCalls: 5}
	f.mu.Unlock()
	f.publish(bulkhead.Event{Type: bulkhead.CallPermitted, Name: "partner"})
	if got := find(t, gather(t, c)["bulkhead_calls_total"], "name=partner", "kind=permitted").GetCounter().GetValue(); got != 1 {
		t.Errorf("re-created bulkhead's permitted = %v, want 1 (from zero)", got)
	}
	c.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.events)+len(f.evicts) != 0 {
		t.Error("Close left listeners on the source")
	}
}

func TestWithSourcesReportsEverySourceAndSumsTheirCounts(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2})
	mustBulkhead(t, r, "shared")
	f := newFleet()
	f.metrics["shared"] = bulkhead.Metrics{MaxAllowedConcurrentCalls: 7}
	f.metrics["fleet-only"] = bulkhead.Metrics{MaxAllowedConcurrentCalls: 9}
	f.stats = bulkhead.RegistryStats{Bulkheads: 2, Evictions: 3}
	c := bulkheadprom.NewCollector(r, bulkheadprom.WithSources(f))
	defer c.Close()
	mfs := gather(t, c) // pedantic: no duplicate series
	maxAllowed := mfs["bulkhead_max_allowed_concurrent_calls"]
	if got := find(t, maxAllowed, "name=shared").GetGauge().GetValue(); got != 2 {
		t.Errorf("shared = %v, want the Registry's 2 (the first source's)", got)
	}
	if got := find(t, maxAllowed, "name=fleet-only").GetGauge().GetValue(); got != 9 {
		t.Errorf("fleet-only = %v, want 9", got)
	}
	if n := len(maxAllowed.GetMetric()); n != 2 {
		t.Errorf("%d series, want 2", n)
	}
	if got := mfs["bulkhead_registry_bulkheads"].GetMetric()[0].GetGauge().GetValue(); got != 3 {
		t.Errorf("bulkheads = %v, want 1+2", got)
	}
	if got := mfs["bulkhead_registry_evictions_total"].GetMetric()[0].GetCounter().GetValue(); got != 3 {
		t.Errorf("evictions = %v, want 3", got)
	}
}

func TestCallDurationHistogramCountsTheTimedCallsOfASemaphore(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 3}, bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	c := bulkheadprom.NewCollector(r, bulkheadprom.WithCallDurationBuckets(10*time.Millisecond, 100*time.Millisecond))
	defer c.Close()
	lease, err := r.TryAcquirePermission("p", bulkhead.CallOptions{}) // timed by its Lease
	if err != nil {
		t.Fatal(err)
	}
	s, _ := r.Find("p")
	s.TryAcquirePermission()
	start := s.StartCall() // timed by FinishCallStarted
	s.TryAcquirePermission()
	clock.Advance(5 * time.Millisecond)
	s.FinishCallStarted(start)
	clock.Advance(45 * time.Millisecond)
	lease.FinishCall()
	s.FinishCall() // a bare FinishCall: not timed
	h := find(t, gather(t, c)["bulkhead_call_duration_seconds"], "name=p").GetHistogram()
	if got, want := buckets(h), map[float64]uint64{0.01: 1, 0.1: 2}; !equal(got, want) || h.GetSampleCount() != 2 || !near(h.GetSampleSum(), 0.055) {
		t.Fatalf("buckets %v count %d sum %v, want %v, 2, 0.055", got, h.GetSampleCount(), h.GetSampleSum(), want)
	}
}

func TestNewCollectorRefusesBadCallDurationBuckets(t *testing.T) {
	r := newRegistry(t, bulkhead.DefaultConfig())
	defer func() {
		p, _ := recover().(string)
		if !strings.Contains(p, "WithCallDurationBuckets") || !strings.Contains(p, "not strictly increasing") {
			t.Errorf("panic %q, want one naming WithCallDurationBuckets and the fault", p)
		}
	}()
	bulkheadprom.NewCollector(r, bulkheadprom.WithCallDurationBuckets(time.Second, time.Millisecond)).Close()
}

func TestDefaultCallDurationBucketsSpanMillisecondsToAMinute(t *testing.T) {
	b := bulkheadprom.DefaultCallDurationBuckets()
	if b[0] >= time.Millisecond || b[len(b)-1] < 30*time.Second {
		t.Fatalf("default buckets %v", b)
	}
	b[0] = time.Hour
	if bulkheadprom.DefaultCallDurationBuckets()[0] == time.Hour {
		t.Fatal("DefaultCallDurationBuckets returned the package's own slice")
	}
}
