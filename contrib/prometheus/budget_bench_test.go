package prometheus_test

import (
	"testing"

	"github.com/rxbulkhead/bulkhead"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
)

// BenchmarkBudgetCallFinish measures what a BudgetCollector costs a budget
// call granted at once (a flow's AcquirePermissionAsync and FinishCall, two
// events): collector=false is the bare budget, collector=true the same
// calls counted (a clock read per event, a class lookup, the counters and
// the wait histogram), listener=noop the events published to a listener
// that does nothing (what any listener costs, so collector=true minus
// listener=noop is the collector's own work), on the real clock and on
// counterClock (no clock read).
func BenchmarkBudgetCallFinish(b *testing.B) {
	for _, bc := range []struct {
		name            string
		collector, noop bool
		opts            []bulkhead.Option
	}{
		{"collector=false", false, false, nil},
		{"listener=noop", false, true, nil},
		{"collector=true", true, false, nil},
		{"collector=false,clock=counter", false, false, []bulkhead.Option{bulkhead.WithClock(&counterClock{})}},
		{"listener=noop,clock=counter", false, true, []bulkhead.Option{bulkhead.WithClock(&counterClock{})}},
		{"collector=true,clock=counter", true, false, []bulkhead.Option{bulkhead.WithClock(&counterClock{})}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			hub, err := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{Size: 1 << 20, Classes: []bulkhead.ClassConfig{{Name: "interactive"}, {Name: "batch"}}}, bc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			p, _ := hub.Flow("walmart", bulkhead.PartnerOptions{Class: "interactive"})
			if bc.noop { // the events published, to a listener that does nothing
				defer hub.OnEvent(func(bulkhead.BudgetEvent) {})()
			}
			if bc.collector {
				c := bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{hub})
				defer c.Close()
			}
			b.ReportAllocs()
			for b.Loop() {
				p.AcquirePermissionAsync()
				p.FinishCall()
			}
		})
	}
}
