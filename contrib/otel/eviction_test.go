package otel_test

import (
	"context"
	"iter"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rxbulkhead/bulkhead"
	bulkheadotel "github.com/rxbulkhead/bulkhead/contrib/otel"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// hasSeries reports whether a collection has a point of instrument whose
// attributes name the bulkhead.
func (c collected) hasSeries(instrument, name string) bool {
	for k := range c.hists {
		if strings.HasPrefix(k, instrument+"{") && strings.Contains(k, "name="+name) {
			return true
		}
	}
	for k := range c.ints {
		if strings.HasPrefix(k, instrument+"{") && strings.Contains(k, "name="+name) {
			return true
		}
	}
	return false
}

// The histograms' series of an evicted bulkhead: exported no more after
// the first collection that follows its eviction under delta temporality
// (the SDK drops the attribute sets not recorded during the interval), kept
// by the SDK under cumulative temporality, as Instruments documents. The
// observed instruments drop it under both.
func TestHistogramSeriesOfAnEvictedBulkheadGoUnderDeltaTemporality(t *testing.T) {
	for _, tc := range []struct {
		temporality metricdata.Temporality
		kept        bool
	}{
		{metricdata.DeltaTemporality, false},
		{metricdata.CumulativeTemporality, true},
	} {
		t.Run(tc.temporality.String(), func(t *testing.T) {
			clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1},
				bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)), bulkhead.WithIdleTimeout(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			testkit.CheckRegistry(t, r)
			reader := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality {
				return tc.temporality
			}))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			defer func() { _ = mp.Shutdown(context.Background()) }()
			in, err := bulkheadotel.Start(r, bulkheadotel.WithMeterProvider(mp))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = in.Close() }()

			lease, err := r.TryAcquirePermission("tenant", bulkhead.CallOptions{})
			if err != nil {
				t.Fatal(err)
			}
			clock.Advance(10 * time.Millisecond)
			lease.FinishCall()
			before := collectAll(t, reader)
			for _, inst := range []string{"bulkhead.wait.duration", "bulkhead.call.duration", "bulkhead.calls"} {
				if !before.hasSeries(inst, "tenant") {
					t.Fatalf("no %s series before the eviction", inst)
				}
			}
			clock.Advance(2 * time.Second) // evicted as idle
			if _, ok := r.Find("tenant"); ok {
				t.Fatal("not evicted")
			}
			after := collectAll(t, reader)
			if after.hasSeries("bulkhead.calls", "tenant") {
				t.Error("an observed series of the evicted bulkhead")
			}
			for _, inst := range []string{"bulkhead.wait.duration", "bulkhead.call.duration"} {
				if got := after.hasSeries(inst, "tenant"); got != tc.kept {
					t.Errorf("%s series of the evicted bulkhead present: %v, want %v", inst, got, tc.kept)
				}
			}
		})
	}
}

// fleet is a bulkhead.MetricsSource that is not a bulkhead.Registry, as the
// fleet's Registry of contrib/redis is.
type fleet struct {
	metrics  map[string]bulkhead.Metrics
	onEvent  func(bulkhead.Event)
	onEvict  func(string)
	removed  int
	evictRem int
}

func (f *fleet) OnEvent(fn func(bulkhead.Event)) func() {
	f.onEvent = fn
	return func() { f.removed++ }
}

func (f *fleet) OnEvict(fn func(string)) func() {
	f.onEvict = fn
	return func() { f.evictRem++ }
}

func (f *fleet) Stats() bulkhead.RegistryStats {
	return bulkhead.RegistryStats{Bulkheads: len(f.metrics), Evictions: 2}
}

func (f *fleet) AllMetrics() iter.Seq2[string, bulkhead.Metrics] {
	return func(yield func(string, bulkhead.Metrics) bool) {
		for _, n := range []string{"a", "b"} {
			if m, ok := f.metrics[n]; ok && !yield(n, m) {
				return
			}
		}
	}
}

func TestInstrumentsObserveAMetricsSourceThatIsNotARegistry(t *testing.T) {
	f := &fleet{metrics: map[string]bulkhead.Metrics{
		"a": {AvailableConcurrentCalls: 1, MaxAllowedConcurrentCalls: 4, QueuedCalls: 2, MaxQueuedCalls: 8},
		"b": {MaxAllowedConcurrentCalls: 2, ShadowMode: true},
	}}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	in, err := bulkheadotel.Start(f, bulkheadotel.WithMeterProvider(mp), bulkheadotel.WithCallDurationBuckets(time.Millisecond, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []bulkhead.Event{
		{Type: bulkhead.CallPermitted, Name: "a", Wait: 3 * time.Millisecond},
		{Type: bulkhead.CallFinished, Name: "a", CallDuration: 40 * time.Millisecond},
		{Type: bulkhead.CallRejected, Name: "a", Reason: bulkhead.QueueFull},
	} {
		f.onEvent(e)
	}
	got := collectAll(t, reader)
	for k, want := range map[string]int64{
		"bulkhead.available_concurrent_calls{name=a}":       1,
		"bulkhead.max_allowed_concurrent_calls{name=a}":     4,
		"bulkhead.queued_calls{name=a}":                     2,
		"bulkhead.max_queued_calls{name=a}":                 8,
		"bulkhead.calls{kind=permitted,name=a}":             1,
		"bulkhead.calls{kind=finished,name=a}":              1,
		"bulkhead.rejected_calls{name=a,reason=queue_full}": 1,
		"bulkhead.shadowed_calls{name=b,reason=no_wait}":    0, // b is in shadow mode
		"bulkhead.registry.bulkheads{}":                     2,
		"bulkhead.registry.evictions{}":                     2,
	} {
		if v, ok := got.ints[k]; !ok || v != want {
			t.Errorf("%s = %d (present %v), want %d", k, v, ok, want)
		}
	}
	if d := got.hists["bulkhead.call.duration{name=a}"]; d.Count != 1 || !near(d.Sum, 0.04) || d.BucketCounts[1] != 1 {
		t.Errorf("call duration: count %d sum %v buckets %v", d.Count, d.Sum, d.BucketCounts)
	}
	if w := got.hists["bulkhead.wait.duration{name=a,outcome=granted}"]; w.Count != 1 || !near(w.Sum, 0.003) {
		t.Errorf("wait: count %d sum %v", w.Count, w.Sum)
	}
	f.onEvict("a")
	delete(f.metrics, "a")
	if collectAll(t, reader).hasSeries("bulkhead.calls", "a") {
		t.Error("an evicted bulkhead is still observed")
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if f.removed != 1 || f.evictRem != 1 {
		t.Errorf("Close unsubscribed %d listeners and %d evict funcs, want 1 and 1", f.removed, f.evictRem)
	}
}

func TestStartRefusesBadCallDurationBucketsAndANilSource(t *testing.T) {
	r := newRegistry(t, bulkhead.DefaultConfig())
	mp := sdkmetric.NewMeterProvider()
	defer func() { _ = mp.Shutdown(context.Background()) }()
	_, err := bulkheadotel.Start(r, bulkheadotel.WithMeterProvider(mp), bulkheadotel.WithCallDurationBuckets(0, time.Second))
	if err == nil || !strings.Contains(err.Error(), "WithCallDurationBuckets") || !strings.Contains(err.Error(), "not positive") {
		t.Fatalf("err = %v, want one naming WithCallDurationBuckets and the fault", err)
	}
	var nilRegistry *bulkhead.Registry
	for _, src := range []bulkhead.MetricsSource{nil, nilRegistry} {
		func() {
			defer func() {
				if p := recover(); p != "bulkhead/contrib/otel: Start called with a nil bulkhead.MetricsSource" {
					t.Errorf("Start(%#v) recovered %v", src, p)
				}
			}()
			_, _ = bulkheadotel.Start(src, bulkheadotel.WithMeterProvider(mp))
		}()
	}
}
