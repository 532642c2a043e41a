package otel_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rxbulkhead/bulkhead"
	bulkheadotel "github.com/rxbulkhead/bulkhead/contrib/otel"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// An event whose publication was under way when Close ran (the bulkhead
// took its list of listeners before Close removed ours) reaches the
// instruments' listener after Close: it must record nothing.
func TestInstrumentsRecordNoEventThatArrivesAfterClose(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2})
	s := mustBulkhead(t, r, "acme")
	entered, resume := make(chan struct{}), make(chan struct{})
	hold := true
	remove := s.OnEvent(func(e bulkhead.Event) {
		if hold && e.Type == bulkhead.CallPermitted {
			hold = false
			close(entered)
			<-resume
		}
	})
	defer remove()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	in, err := bulkheadotel.Start(r, bulkheadotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	go func() { done <- s.TryAcquirePermission() }()
	<-entered // CallPermitted is being published, our listener next in line
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	close(resume)
	if !<-done {
		t.Fatal("the call was not permitted")
	}
	s.FinishCall() // after Close: nothing to record either
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
				for _, p := range h.DataPoints {
					t.Errorf("%s{%s} recorded %d observations after Close", m.Name, attrs(p.Attributes), p.Count)
				}
			}
		}
	}
}

// The budget side of the same: an event under way when Close ran records
// no wait.
func TestBudgetInstrumentsRecordNoEventThatArrivesAfterClose(t *testing.T) {
	b := newHubBudget(t, "hub", testkit.NewVirtualClock(time.Unix(0, 0)))
	entered, resume := make(chan struct{}), make(chan struct{})
	hold := true
	remove := b.OnEvent(func(e bulkhead.BudgetEvent) {
		if hold && e.Type == bulkhead.CallPermitted {
			hold = false
			close(entered)
			<-resume
		}
	})
	defer remove()
	in, reader := startBudgets(t, []*bulkhead.Budget{b})
	p, err := b.Flow("walmart", bulkhead.PartnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- p.AcquirePermissionAsync().Err() }()
	<-entered
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	p.FinishCall()
	if got := collectAll(t, reader); len(got.hists) != 0 {
		t.Errorf("recorded after Close: %v", got.hists)
	}
}
