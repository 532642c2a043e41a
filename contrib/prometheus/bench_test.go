package prometheus_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rxbulkhead/bulkhead"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
)

// BenchmarkCollect500 measures one scrape of a 500-partner registry.
func BenchmarkCollect500(b *testing.B) {
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		panic(err)
	}
	for i := range 500 {
		if _, err := r.Get(fmt.Sprintf("partner-%03d", i)); err != nil {
			b.Fatal(err)
		}
	}
	c := bulkheadprom.NewCollector(r)
	defer c.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTryAcquireFinishCall measures what a Collector adds to the hot
// path of a bulkhead (two events per iteration): collector=false is the
// bare path, collector=true the same calls counted, and
// collector=true,timed=true the call timed too (StartCall and
// FinishCallStarted: a third histogram), as the Lease and the operators do.
func BenchmarkTryAcquireFinishCall(b *testing.B) {
	for _, bc := range []struct {
		name             string
		collector, timed bool
	}{
		{"collector=false", false, false},
		{"collector=true", true, false},
		{"collector=true,timed=true", true, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1 << 20})
			if err != nil {
				panic(err)
			}
			s, _ := r.Get("p")
			if bc.collector {
				c := bulkheadprom.NewCollector(r)
				defer c.Close()
			}
			b.ReportAllocs()
			if bc.timed {
				for b.Loop() {
					s.TryAcquirePermission()
					s.FinishCallStarted(s.StartCall())
				}
				return
			}
			for b.Loop() {
				s.TryAcquirePermission()
				s.FinishCall()
			}
		})
	}
}
