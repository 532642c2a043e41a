package otel_test

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rxbulkhead/bulkhead"
	bulkheadotel "github.com/rxbulkhead/bulkhead/contrib/otel"
	"github.com/rxbulkhead/bulkhead/internal/metricstest"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// collected is one collection of the manual reader, flattened.
type collected struct {
	ints  map[string]int64                                  // "instrument{attrs}" -> value
	hists map[string]metricdata.HistogramDataPoint[float64] // "instrument{attrs}" -> point
}

func collectAll(t *testing.T, reader sdkmetric.Reader) collected {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	c := collected{ints: map[string]int64{}, hists: map[string]metricdata.HistogramDataPoint[float64]{}}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					c.ints[m.Name+"{"+attrs(p.Attributes)+"}"] = p.Value
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					c.ints[m.Name+"{"+attrs(p.Attributes)+"}"] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					c.hists[m.Name+"{"+attrs(p.Attributes)+"}"] = p
				}
			}
		}
	}
	return c
}

// The checks of the real-Prometheus test (contrib/prometheus), on the
// OpenTelemetry side through the SDK's in-memory reader: Semaphores and a
// pool run under load in a testing/synctest bubble (so every wait and
// call has a deterministic, fake-clock duration), and what the reader
// collects matches what the test saw: the 99th percentile of the waits
// and of the call durations, each rejection reason's share, the raw
// counters.
func TestOTelReaderAnswersAboutTheLoadTheTestRan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		waitBuckets := []time.Duration{time.Millisecond, 5 * time.Millisecond, 25 * time.Millisecond, 100 * time.Millisecond, time.Second}
		durationBuckets := []time.Duration{time.Millisecond, 2500 * time.Microsecond, 4 * time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond}
		r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1},
			bulkhead.WithConfig("handoff", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded}),
			bulkhead.WithConfig("mixed", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 7 * time.Millisecond, MaxQueuedCalls: 2}))
		if err != nil {
			t.Fatal(err)
		}
		testkit.CheckRegistry(t, r)
		handoff, _ := r.GetWithConfig("handoff", "handoff")
		mixed, _ := r.GetWithConfig("mixed", "mixed")
		preg, err := pool.NewRegistry(pool.Config{MaxWorkers: 1, CoreWorkers: 1, QueueCapacity: 1, KeepAlive: time.Second, MaxQueueWait: bulkhead.NoTimeout})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = preg.Close(context.Background()) }()
		reports, _ := preg.Get("reports")

		// What the test saw, from its own listeners.
		waits := metricstest.NewHistogram(waitBuckets)
		durations := map[string]*metricstest.Histogram{}
		var mu sync.Mutex
		kinds := map[string]map[bulkhead.EventType]int64{}
		reasons := map[bulkhead.Reason]int64{}
		for _, name := range []string{"handoff", "mixed", "reports"} {
			durations[name] = metricstest.NewHistogram(durationBuckets)
			kinds[name] = map[bulkhead.EventType]int64{}
		}
		listen := func(e bulkhead.Event) {
			mu.Lock()
			kinds[e.Name][e.Type]++
			if e.Name == "mixed" && e.Type == bulkhead.CallRejected {
				reasons[e.Reason]++
			}
			mu.Unlock()
			if e.Name == "handoff" && e.Type == bulkhead.CallPermitted {
				waits.Add(e.Wait)
			}
			if e.Type == bulkhead.CallFinished && e.CallDuration > 0 {
				durations[e.Name].Add(e.CallDuration)
			}
		}
		handoff.OnEvent(listen)
		mixed.OnEvent(listen)
		reports.OnEvent(listen)

		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		defer func() { _ = mp.Shutdown(context.Background()) }()
		in, err := bulkheadotel.Start(r, bulkheadotel.WithMeterProvider(mp), bulkheadotel.WithPools(preg),
			bulkheadotel.WithWaitBuckets(waitBuckets...), bulkheadotel.WithCallDurationBuckets(durationBuckets...))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = in.Close() }()

		// The load of the real-Prometheus test, for 3 s of the bubble's
		// time: handoff's permit passes between two callers (FinishCallStarted);
		// four callers share mixed's through the registry's Lease, a fifth
		// only tries; three submitters share the pool's worker.
		ctx, stop := context.WithTimeout(context.Background(), 3*time.Second)
		defer stop()
		var load sync.WaitGroup
		run := func(f func()) {
			load.Go(func() {
				for ctx.Err() == nil {
					f()
				}
			})
		}
		for range 2 {
			run(func() {
				if handoff.AcquirePermission(context.Background()) == nil {
					start := handoff.StartCall()
					time.Sleep(2 * time.Millisecond)
					handoff.FinishCallStarted(start)
				}
			})
		}
		for i := range 4 {
			run(func() {
				if lease, err := r.AcquirePermission(context.Background(), "mixed", bulkhead.CallOptions{}); err == nil {
					time.Sleep(time.Duration(3+i) * time.Millisecond)
					lease.FinishCall()
				} else {
					time.Sleep(time.Millisecond)
				}
			})
		}
		run(func() {
			if lease, err := r.TryAcquirePermission("mixed", bulkhead.CallOptions{}); err == nil {
				time.Sleep(500 * time.Microsecond)
				lease.FinishCall()
			}
			time.Sleep(time.Millisecond)
		})
		var poolRejected atomic.Int64
		for i := range 3 {
			run(func() {
				f := pool.Submit(context.Background(), reports, func(context.Context) (int, error) {
					time.Sleep(time.Duration(2+i) * time.Millisecond)
					return 0, nil
				})
				if _, err := f.Get(context.Background()); err != nil {
					poolRejected.Add(1)
					time.Sleep(time.Millisecond)
				}
			})
		}
		load.Wait()
		synctest.Wait()

		got := collectAll(t, reader)
		mu.Lock()
		defer mu.Unlock()
		// The raw counters.
		for name, byKind := range kinds {
			for _, k := range []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallRejected, bulkhead.CallFinished, bulkhead.CallCancelled} {
				key := "bulkhead.calls{kind=" + k.String() + ",name=" + name + "}"
				if got.ints[key] != byKind[k] {
					t.Errorf("%s = %d, the test saw %d", key, got.ints[key], byKind[k])
				}
			}
		}
		if v := got.ints["bulkhead.rejected_calls{name=reports,reason=queue_full}"]; v != poolRejected.Load() || v == 0 {
			t.Errorf("pool queue_full = %d, the test saw %d", v, poolRejected.Load())
		}
		// Each reason's share of mixed's rejections.
		var total int64
		for _, n := range reasons {
			total += n
		}
		for _, reason := range []bulkhead.Reason{bulkhead.NoWait, bulkhead.QueueFull, bulkhead.WaitTimeout} {
			label := map[bulkhead.Reason]string{bulkhead.NoWait: "no_wait", bulkhead.QueueFull: "queue_full", bulkhead.WaitTimeout: "wait_timeout"}[reason]
			if reasons[reason] == 0 {
				t.Errorf("the load made no %s rejection: the test checks nothing for it", label)
			}
			n := got.ints["bulkhead.rejected_calls{name=mixed,reason="+label+"}"]
			if share, want := float64(n)/float64(total), float64(reasons[reason])/float64(total); math.Abs(share-want) > 1e-12 {
				t.Errorf("share of %s: reader %v, the test %v", label, share, want)
			}
		}
		// The 99th percentile of handoff's waits.
		w := got.hists["bulkhead.wait.duration{name=handoff,outcome=granted}"]
		if !slices.Equal(w.Bounds, metricstest.Seconds(waitBuckets)) || !slices.Equal(w.BucketCounts, waits.Counts()) {
			t.Errorf("handoff's waits: bounds %v counts %v, the test's %v", w.Bounds, w.BucketCounts, waits.Counts())
		}
		if p, want := metricstest.Quantile(0.99, w.Bounds, metricstest.Cumulative(w.BucketCounts)), metricstest.Quantile(0.99, metricstest.Seconds(waitBuckets), metricstest.Cumulative(waits.Counts())); math.Abs(p-want) > 1e-9*want || w.Count == 0 {
			t.Errorf("p99 of handoff's waits: reader %v, the test %v", p, want)
		}
		// The call durations: every finished call timed, and the 99th
		// percentile of each bulkhead's.
		for _, name := range []string{"handoff", "mixed", "reports"} {
			d := got.hists["bulkhead.call.duration{name="+name+"}"]
			mine := durations[name].Counts()
			if !slices.Equal(d.BucketCounts, mine) {
				t.Errorf("%s's call durations: counts %v, the test's %v", name, d.BucketCounts, mine)
			}
			if int64(d.Count) != kinds[name][bulkhead.CallFinished] || d.Count == 0 {
				t.Errorf("%s: %d timed calls of %d finished", name, d.Count, kinds[name][bulkhead.CallFinished])
			}
			if p, want := metricstest.Quantile(0.99, d.Bounds, metricstest.Cumulative(d.BucketCounts)), metricstest.Quantile(0.99, metricstest.Seconds(durationBuckets), metricstest.Cumulative(mine)); math.Abs(p-want) > 1e-9*want {
				t.Errorf("p99 of %s's call durations: reader %v, the test %v", name, p, want)
			}
		}
		t.Logf("handoff %d grants; mixed rejections %v; pool rejections %d; timed calls %d/%d/%d",
			w.Count, reasons, poolRejected.Load(),
			got.hists["bulkhead.call.duration{name=handoff}"].Count, got.hists["bulkhead.call.duration{name=mixed}"].Count, got.hists["bulkhead.call.duration{name=reports}"].Count)
	})
}
