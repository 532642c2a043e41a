package otel_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rxbulkhead/bulkhead"
	bulkheadotel "github.com/rxbulkhead/bulkhead/contrib/otel"
	"github.com/rxbulkhead/bulkhead/pool"
)

// A source given twice (to Start and to WithSources, or a pool registry
// through WithPools and through its MetricsSource) is observed once: its
// registry-wide counts were summed twice, and its events recorded into two
// tables.
func TestASourceGivenTwiceIsObservedOnce(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	s := mustBulkhead(t, r, "acme")
	preg, err := pool.NewRegistry(pool.Config{MaxWorkers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = preg.Close(context.Background()) }()
	if _, err := preg.Get("resizer"); err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	in, err := bulkheadotel.Start(r, bulkheadotel.WithMeterProvider(mp),
		bulkheadotel.WithSources(r), bulkheadotel.WithPools(preg), bulkheadotel.WithSources(preg.MetricsSource()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close() }()
	if !s.TryAcquirePermission() {
		t.Fatal("no permit")
	}
	s.FinishCall()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					got[m.Name+"{"+attrs(p.Attributes)+"}"] = p.Value
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					got[m.Name+"{"+attrs(p.Attributes)+"}"] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					got[m.Name+"{"+attrs(p.Attributes)+"}"] += int64(p.Count)
				}
			}
		}
	}
	for k, want := range map[string]int64{
		"bulkhead.registry.bulkheads{}":                          2, // acme and resizer, once each
		"bulkhead.calls{kind=permitted,name=acme}":               1,
		"bulkhead.wait.duration{name=acme,outcome=granted}":      1,
		"bulkhead.available_concurrent_calls{name=resizer}":      1,
		"bulkhead.max_allowed_concurrent_calls{name=acme}":       1,
		"bulkhead.rejected_calls{name=acme,reason=unavailable}":  0,
		"bulkhead.rejected_calls{name=resizer,reason=no_wait}":   0,
		"bulkhead.max_allowed_concurrent_calls{name=resizer}":    1,
		"bulkhead.calls{kind=finished,name=acme}":                1,
		"bulkhead.registry.evictions{}":                          0,
		"bulkhead.registry.catch_all_calls{}":                    0,
		"bulkhead.calls{kind=permitted,name=resizer}":            0,
		"bulkhead.rejected_calls{name=acme,reason=wait_timeout}": 0,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %d (present %v), want %d", k, v, ok, want)
		}
	}
}

// A typed nil source (a nil pointer of a MetricsSource type other than
// *bulkhead.Registry) is refused with a panic naming it, not a nil
// dereference inside the first OnEvict.
func TestATypedNilSourcePanicsNamingIt(t *testing.T) {
	var typedNil bulkhead.MetricsSource = (*nilSource)(nil)
	for name, f := range map[string]func(){
		"Start": func() { _, _ = bulkheadotel.Start(typedNil) },
		"WithSources": func() {
			_, _ = bulkheadotel.Start(newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1}), bulkheadotel.WithSources(typedNil))
		},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if msg := fmt.Sprint(recover()); !strings.Contains(msg, "nil bulkhead.MetricsSource") {
					t.Fatalf("panic %q, want one naming the nil bulkhead.MetricsSource", msg)
				}
			}()
			f()
		})
	}
}

// A nil *pool.Registry given to WithPools makes Start panic naming it, as
// contrib/prometheus's NewCollector does (Start ignored it, so a pool
// registry not yet built went unobserved without a word).
func TestWithPoolsOfANilRegistryPanicsNamingIt(t *testing.T) {
	defer func() {
		if msg := fmt.Sprint(recover()); !strings.Contains(msg, "WithPools called with a nil *pool.Registry") {
			t.Fatalf("panic %q, want one naming the nil *pool.Registry", msg)
		}
	}()
	in, err := bulkheadotel.Start(newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1}), bulkheadotel.WithPools(nil))
	if err == nil {
		_ = in.Close()
	}
}

// nilSource is a MetricsSource whose methods dereference their receiver.
type nilSource struct{ r *bulkhead.Registry }

func (n *nilSource) OnEvent(f func(bulkhead.Event)) func()           { return n.r.OnEvent(f) }
func (n *nilSource) OnEvict(f func(string)) func()                   { return n.r.OnEvict(f) }
func (n *nilSource) Stats() bulkhead.RegistryStats                   { return n.r.Stats() }
func (n *nilSource) AllMetrics() iter.Seq2[string, bulkhead.Metrics] { return n.r.AllMetrics() }

// A bucket option given no bounds is refused, as the Prometheus collector
// refuses it, rather than silently replaced by the defaults.
func TestStartRefusesABucketOptionWithoutBounds(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	for name, opt := range map[string]bulkheadotel.Option{
		"WithWaitBuckets":         bulkheadotel.WithWaitBuckets(),
		"WithCallDurationBuckets": bulkheadotel.WithCallDurationBuckets([]time.Duration{}...),
	} {
		in, err := bulkheadotel.Start(r, opt)
		if err == nil {
			_ = in.Close()
			t.Errorf("%s(): Start succeeded", name)
			continue
		}
		if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "no bucket bounds") {
			t.Errorf("%s(): %v, want an error naming the option and the fault", name, err)
		}
	}
}
