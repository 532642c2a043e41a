package prometheus_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

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
func BenchmarkTryAcquireFinishCall(b *testing.B) { benchmarkMetricsPerCall(b) }

// BenchmarkTryAcquireFinishCallCounterClock is BenchmarkTryAcquireFinishCall
// on a clock that reads no time (counterClock): what the metrics cost
// without the clock reads, which are most of it (time.Now costs 100 ns and
// more on some virtual machines) and most of its noise.
func BenchmarkTryAcquireFinishCallCounterClock(b *testing.B) {
	benchmarkMetricsPerCall(b, bulkhead.WithSemaphoreOptions(bulkhead.WithClock(&counterClock{})))
}

// counterClock is a Clock whose every reading is 1 ns after the last.
type counterClock struct{ n atomic.Int64 }

func (c *counterClock) Now() time.Time { return time.Unix(0, c.n.Add(1)) }

func (c *counterClock) AfterFunc(time.Duration, func()) bulkhead.Timer {
	panic("counterClock has no timers: the benchmark never waits")
}

func benchmarkMetricsPerCall(b *testing.B, opts ...bulkhead.RegistryOption) {
	for _, bc := range []struct {
		name             string
		collector, timed bool
	}{
		{"collector=false", false, false},
		{"collector=true", true, false},
		{"collector=true,timed=true", true, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1 << 20}, opts...)
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
