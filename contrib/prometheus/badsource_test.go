package prometheus_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
	"github.com/rxbulkhead/bulkhead/pool"
)

// A source given twice (to NewCollector and to WithSources, or a pool
// registry through WithPools and through its MetricsSource) is reported
// once: its registry-wide counts were summed twice.
func TestASourceGivenTwiceIsReportedOnce(t *testing.T) {
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
	c := bulkheadprom.NewCollector(r, bulkheadprom.WithSources(r), bulkheadprom.WithPools(preg), bulkheadprom.WithSources(preg.MetricsSource()))
	defer c.Close()
	if !s.TryAcquirePermission() {
		t.Fatal("no permit")
	}
	s.FinishCall()
	mfs := gather(t, c)
	if got := mfs["bulkhead_registry_bulkheads"].GetMetric()[0].GetGauge().GetValue(); got != 2 {
		t.Errorf("bulkhead_registry_bulkheads = %v, want 2 (acme and resizer, once each)", got)
	}
	if got := find(t, mfs["bulkhead_calls_total"], "kind=permitted", "name=acme").GetCounter().GetValue(); got != 1 {
		t.Errorf("acme's permitted calls = %v, want 1", got)
	}
	if n := len(mfs["bulkhead_max_allowed_concurrent_calls"].GetMetric()); n != 2 {
		t.Errorf("%d gauge series, want 2", n)
	}
}

// A typed nil source (a nil pointer of a MetricsSource type other than
// *bulkhead.Registry) is refused with a panic naming it, not a nil
// dereference inside the first OnEvict.
func TestATypedNilSourcePanicsNamingIt(t *testing.T) {
	var typedNil bulkhead.MetricsSource = (*nilSource)(nil)
	for name, f := range map[string]func(){
		"NewCollector": func() { bulkheadprom.NewCollector(typedNil) },
		"WithSources": func() {
			bulkheadprom.NewCollector(newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1}), bulkheadprom.WithSources(typedNil))
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

// nilSource is a MetricsSource whose methods dereference their receiver.
type nilSource struct{ r *bulkhead.Registry }

func (n *nilSource) OnEvent(f func(bulkhead.Event)) func()           { return n.r.OnEvent(f) }
func (n *nilSource) OnEvict(f func(string)) func()                   { return n.r.OnEvict(f) }
func (n *nilSource) Stats() bulkhead.RegistryStats                   { return n.r.Stats() }
func (n *nilSource) AllMetrics() iter.Seq2[string, bulkhead.Metrics] { return n.r.AllMetrics() }
