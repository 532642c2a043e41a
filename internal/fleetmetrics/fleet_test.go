package fleetmetrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	goredis "github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rxbulkhead/bulkhead"
	bulkheadotel "github.com/rxbulkhead/bulkhead/contrib/otel"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
	"github.com/rxbulkhead/bulkhead/internal/metricstest"
)

// Every wait of the test is bounded by one of these.
const (
	outcomeTimeout = 10 * time.Second // an outcome that must come
	scrapeTimeout  = 15 * time.Second // a series that must reach Prometheus
)

var (
	waitBuckets     = []time.Duration{time.Millisecond, 5 * time.Millisecond, 25 * time.Millisecond, 100 * time.Millisecond, time.Second}
	durationBuckets = []time.Duration{time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond}
)

// The bulkheads whose series the test checks: pinned (Get), so that no
// eviction forgets their counts, and the catch-all.
var checked = []string{"steady", "nowait", "queue", bulkhead.CatchAllName}

// tally is what the test saw of one bulkhead, from its own listener on
// the fleet Registry.
type tally struct {
	kinds             map[bulkhead.EventType]int64
	reasons           map[bulkhead.Reason]int64
	granted, rejected *metricstest.Histogram // waits
	durations         *metricstest.Histogram
}

func newTally() *tally {
	return &tally{
		kinds: map[bulkhead.EventType]int64{}, reasons: map[bulkhead.Reason]int64{},
		granted: metricstest.NewHistogram(waitBuckets), rejected: metricstest.NewHistogram(waitBuckets),
		durations: metricstest.NewHistogram(durationBuckets),
	}
}

// The fleet bulkhead through both exporters, for real: a fleet Registry on
// a redis-server of the test's own runs keyed and direct calls under load
// (grants after waits, wait timeouts, no-wait and queue-full rejections,
// cancels, idle evictions and keys sent to the catch-all beyond the cap),
// then Redis is killed and calls are rejected as unavailable. The
// contrib/prometheus Collector is scraped by a real Prometheus and the
// contrib/otel instruments read by the SDK's in-memory reader, and both
// report, under the names and labels of every bulkhead kind, exactly what
// the test's own listener saw: the calls by kind, the rejections by reason
// (unavailable included), the wait and call-duration histograms (their
// buckets and 99th percentiles), the gauges and the registry's counts.
// promtool accepts the exposition.
func TestTheFleetRegistryExportsTheMetricSetOfEveryKind(t *testing.T) {
	srv := startRedis(t)
	client := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	defer client.Close()
	store, err := rxredis.NewStore(client, rxredis.StoreConfig{
		KeyPrefix: "fleetmetrics:", LeaseTTL: 3 * time.Second, PollInterval: 20 * time.Millisecond,
		Timeout: 500 * time.Millisecond, ProbeInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := func(permits int, wait time.Duration, queued int) rxredis.Config {
		return rxredis.Config{Config: bulkhead.Config{MaxConcurrentCalls: permits, MaxWaitDuration: wait, MaxQueuedCalls: queued}}
	}
	reg, err := rxredis.NewRegistry(store, cfg(2, 20*time.Millisecond, bulkhead.Unbounded),
		rxredis.WithConfig("nowait", cfg(1, 0, 0)),
		rxredis.WithConfig("queue", cfg(1, time.Second, 1)),
		rxredis.WithIdleTimeout(200*time.Millisecond),
		rxredis.WithMaxBulkheads(5, cfg(1, 20*time.Millisecond, bulkhead.Unbounded)))
	if err != nil {
		t.Fatal(err)
	}
	steady, err := reg.Get("steady")
	if err != nil {
		t.Fatal(err)
	}
	nowait, err := reg.GetWithConfig("nowait", "nowait")
	if err != nil {
		t.Fatal(err)
	}
	queue, err := reg.GetWithConfig("queue", "queue")
	if err != nil {
		t.Fatal(err)
	}

	// What the test saw.
	var mu sync.Mutex
	seen := map[string]*tally{}
	for _, name := range checked {
		seen[name] = newTally()
	}
	defer reg.OnEvent(func(e bulkhead.Event) {
		mu.Lock()
		defer mu.Unlock()
		s := seen[e.Name]
		if s == nil {
			return // a passing key: its series go with its eviction
		}
		s.kinds[e.Type]++
		switch e.Type {
		case bulkhead.CallPermitted:
			s.granted.Add(e.Wait)
		case bulkhead.CallRejected:
			s.rejected.Add(e.Wait)
			s.reasons[e.Reason]++
		case bulkhead.CallFinished:
			if e.CallDuration > 0 {
				s.durations.Add(e.CallDuration)
			}
		}
	})()

	// Both exporters over the fleet Registry.
	collector := bulkheadprom.NewCollector(reg, bulkheadprom.WithWaitBuckets(waitBuckets...), bulkheadprom.WithCallDurationBuckets(durationBuckets...))
	defer collector.Close()
	promReg := prometheus.NewPedanticRegistry()
	promReg.MustRegister(collector)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(promReg, promhttp.HandlerOpts{}))
	httpSrv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = httpSrv.Serve(l) }()
	defer httpSrv.Close()
	prom := metricstest.StartPrometheus(t, l.Addr().String())

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	instruments, err := bulkheadotel.Start(reg, bulkheadotel.WithMeterProvider(mp),
		bulkheadotel.WithWaitBuckets(waitBuckets...), bulkheadotel.WithCallDurationBuckets(durationBuckets...))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = instruments.Close() }()

	prom.Await(t, `up{job="bulkheads"}`, 1, 20*time.Second)

	// The load.
	await := func(a *bulkhead.Acquisition) error {
		select {
		case <-a.Done():
			return a.Err()
		case <-time.After(outcomeTimeout):
			return fmt.Errorf("no outcome within %v", outcomeTimeout)
		}
	}
	var load sync.WaitGroup
	var failures sync.Map
	stop := time.Now().Add(2500 * time.Millisecond)
	run := func(what string, call func(r *rand.Rand) error) {
		load.Go(func() {
			r := rand.New(rand.NewPCG(uint64(len(what)), uint64(time.Now().UnixNano())))
			for time.Now().Before(stop) {
				if err := call(r); err != nil {
					failures.Store(what, err)
					return
				}
			}
		})
	}
	// hold calls through p: a grant holds its permit for 1-8 ms; a
	// rejection is expected (it is counted by the listener).
	hold := func(p *rxredis.Permit, r *rand.Rand) error {
		err := await(p.Acquisition())
		switch {
		case err == nil:
			time.Sleep(time.Duration(1+r.IntN(8)) * time.Millisecond)
			p.Finish()
		case errors.Is(err, bulkhead.ErrBulkheadFull), errors.Is(err, bulkhead.ErrCancelled):
			time.Sleep(time.Millisecond)
		default:
			return err
		}
		return nil
	}
	for range 5 {
		run("steady", func(r *rand.Rand) error { return hold(steady.Acquire(), r) })
	}
	run("steady cancels", func(r *rand.Rand) error {
		p := steady.Acquire()
		time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
		if p.Acquisition().Cancel() {
			return nil
		}
		return hold(p, r)
	})
	for range 3 {
		run("nowait", func(r *rand.Rand) error { return hold(nowait.Acquire(), r) })
		run("queue", func(r *rand.Rand) error { return hold(queue.Acquire(), r) })
	}
	run("passing keys", func(r *rand.Rand) error {
		return hold(reg.Acquire(fmt.Sprintf("key-%d", r.IntN(8)), bulkhead.CallOptions{}), r)
	})
	load.Wait()
	failures.Range(func(what, err any) bool {
		t.Errorf("%s: %v", what, err)
		return true
	})
	// Idle keys go; then Redis goes, and the calls are rejected as
	// unavailable (FailClosed).
	deadline := time.Now().Add(outcomeTimeout)
	for reg.Stats().Bulkheads > 4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	// A fleet bulkhead's free permits are the fleet's as of its last round
	// trip: the releases of the last calls must have reached Redis, and a
	// round trip must have seen them, before Redis goes (under load a
	// release can still be on its way when the idle keys are gone).
	for _, b := range reg.All() {
		if !slices.Contains(checked, b.Name()) {
			continue
		}
		for b.Metrics().AvailableConcurrentCalls != maxAllowed(b.Name()) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %+v %v after the load, want every permit back in Redis", b.Name(), b.Metrics(), outcomeTimeout)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	srv.Kill()
	unavailable := 0
	for unavailable < 5 && time.Now().Before(deadline) {
		err := await(steady.Acquire().Acquisition())
		switch {
		case errors.Is(err, rxredis.ErrUnavailable):
			unavailable++
		case err == nil:
			t.Fatal("granted with Redis killed")
		}
	}

	mu.Lock()
	defer mu.Unlock()
	st := reg.Stats()
	t.Logf("registry %+v; steady %v %v; nowait %v; queue %v; catch-all %v %v", st,
		seen["steady"].kinds, seen["steady"].reasons, seen["nowait"].reasons, seen["queue"].reasons, seen[bulkhead.CatchAllName].kinds, seen[bulkhead.CatchAllName].reasons)
	// The load made every figure the test checks.
	for what, n := range map[string]int64{
		"steady: grants after a wait":  int64(sumAbove(seen["steady"].granted)),
		"steady: wait timeouts":        seen["steady"].reasons[bulkhead.WaitTimeout],
		"steady: cancels":              seen["steady"].kinds[bulkhead.CallCancelled],
		"steady: unavailable":          seen["steady"].reasons[bulkhead.Unavailable],
		"nowait: no_wait":              seen["nowait"].reasons[bulkhead.NoWait],
		"queue: queue_full":            seen["queue"].reasons[bulkhead.QueueFull],
		"catch-all: grants":            seen[bulkhead.CatchAllName].kinds[bulkhead.CallPermitted],
		"registry: evictions":          int64(st.Evictions),
		"registry: calls to catch-all": int64(st.CatchAllCalls),
	} {
		if n == 0 {
			t.Errorf("%s: none, so the test checks nothing for it", what)
		}
	}

	t.Run("prometheus", func(t *testing.T) {
		// A scrape after everything: the last call's rejection is in it.
		prom.Await(t, `bulkhead_rejected_calls_total{name="steady",reason="unavailable"}`, float64(seen["steady"].reasons[bulkhead.Unavailable]), scrapeTimeout)
		for _, name := range checked {
			s := seen[name]
			for _, k := range []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallRejected, bulkhead.CallFinished, bulkhead.CallCancelled} {
				prom.Await(t, fmt.Sprintf(`bulkhead_calls_total{name=%q,kind=%q}`, name, k), float64(s.kinds[k]), scrapeTimeout)
			}
			for _, r := range []bulkhead.Reason{bulkhead.NoWait, bulkhead.QueueFull, bulkhead.WaitTimeout, bulkhead.Evicted, bulkhead.Unavailable} {
				prom.Await(t, fmt.Sprintf(`bulkhead_rejected_calls_total{name=%q,reason=%q}`, name, label(r)), float64(s.reasons[r]), scrapeTimeout)
			}
			for outcome, h := range map[string]*metricstest.Histogram{"granted": s.granted, "rejected": s.rejected} {
				n, cum := h.Cumulative()
				prom.Await(t, fmt.Sprintf(`bulkhead_wait_duration_seconds_count{name=%q,outcome=%q}`, name, outcome), float64(n), scrapeTimeout)
				if n > 0 {
					got := prom.One(t, fmt.Sprintf(`histogram_quantile(0.99, rate(bulkhead_wait_duration_seconds_bucket{name=%q,outcome=%q}[1m]))`, name, outcome))
					if want := metricstest.Quantile(0.99, metricstest.Seconds(waitBuckets), cum); math.Abs(got-want) > 1e-9*want {
						t.Errorf("p99 of %s's %s waits: Prometheus %v, the test %v (buckets %v)", name, outcome, got, want, cum)
					}
					t.Logf("PromQL p99 of %s's %s waits: %.4g s (%d waits, cumulative buckets %v)", name, outcome, got, n, cum)
				}
			}
			n, cum := s.durations.Cumulative()
			if n != uint64(s.kinds[bulkhead.CallFinished]) {
				t.Errorf("%s: %d calls timed of %d finished through Permit.Finish", name, n, s.kinds[bulkhead.CallFinished])
			}
			prom.Await(t, fmt.Sprintf(`bulkhead_call_duration_seconds_count{name=%q}`, name), float64(n), scrapeTimeout)
			if n > 0 {
				got := prom.One(t, fmt.Sprintf(`histogram_quantile(0.99, rate(bulkhead_call_duration_seconds_bucket{name=%q}[1m]))`, name))
				if want := metricstest.Quantile(0.99, metricstest.Seconds(durationBuckets), cum); math.Abs(got-want) > 1e-9*want {
					t.Errorf("p99 of %s's call durations: Prometheus %v, the test %v (buckets %v)", name, got, want, cum)
				}
				t.Logf("PromQL p99 of %s's call durations: %.4g s (%d calls, cumulative buckets %v)", name, got, n, cum)
			}
			prom.Await(t, fmt.Sprintf(`bulkhead_available_concurrent_calls{name=%q}`, name), float64(maxAllowed(name)), scrapeTimeout)
			prom.Await(t, fmt.Sprintf(`bulkhead_max_allowed_concurrent_calls{name=%q}`, name), float64(maxAllowed(name)), scrapeTimeout)
			prom.Await(t, fmt.Sprintf(`bulkhead_queued_calls{name=%q}`, name), 0, scrapeTimeout)
		}
		prom.Await(t, `bulkhead_max_queued_calls{name="queue"}`, 1, scrapeTimeout)
		prom.Await(t, `bulkhead_max_queued_calls{name="nowait"}`, 0, scrapeTimeout)
		prom.Await(t, `bulkhead_registry_evictions_total`, float64(st.Evictions), scrapeTimeout)
		prom.Await(t, `bulkhead_registry_catch_all_calls_total`, float64(st.CatchAllCalls), scrapeTimeout)
		prom.Await(t, `bulkhead_registry_bulkheads`, float64(st.Bulkheads), scrapeTimeout)
		// No series of a passing key is left once it is evicted.
		prom.Await(t, `count(bulkhead_max_allowed_concurrent_calls{name=~"key-.*"}) or vector(0)`, 0, scrapeTimeout)
		// The rejection rate by reason: each reason's share of steady's
		// rejections is the test's.
		var total int64
		for _, n := range seen["steady"].reasons {
			total += n
		}
		shares, err := prom.Query(`sum by (reason) (rate(bulkhead_rejected_calls_total{name="steady"}[1m])) / scalar(sum(rate(bulkhead_rejected_calls_total{name="steady"}[1m])))`)
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range shares {
			t.Logf("PromQL share of steady's rejections with reason=%q: %.4f", sh.Metric["reason"], sh.Value)
			want := float64(seen["steady"].reasons[reasonOf(sh.Metric["reason"])]) / float64(total)
			if math.Abs(sh.Value-want) > 1e-9 {
				t.Errorf("steady's share of %s rejections: Prometheus %v, the test %v", sh.Metric["reason"], sh.Value, want)
			}
		}
		promtoolAccepts(t, "http://"+l.Addr().String()+"/metrics")
	})

	t.Run("otel", func(t *testing.T) {
		got := collect(t, reader)
		for _, name := range checked {
			s := seen[name]
			for _, k := range []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallRejected, bulkhead.CallFinished, bulkhead.CallCancelled} {
				key := fmt.Sprintf("bulkhead.calls{kind=%s,name=%s}", k, name)
				if v, ok := got.ints[key]; !ok || v != s.kinds[k] {
					t.Errorf("%s = %d (present %v), the test saw %d", key, v, ok, s.kinds[k])
				}
			}
			for _, r := range []bulkhead.Reason{bulkhead.NoWait, bulkhead.QueueFull, bulkhead.WaitTimeout, bulkhead.Evicted, bulkhead.Unavailable} {
				key := fmt.Sprintf("bulkhead.rejected_calls{name=%s,reason=%s}", name, label(r))
				if v, ok := got.ints[key]; !ok || v != s.reasons[r] {
					t.Errorf("%s = %d (present %v), the test saw %d", key, v, ok, s.reasons[r])
				}
			}
			for outcome, h := range map[string]*metricstest.Histogram{"granted": s.granted, "rejected": s.rejected} {
				key := fmt.Sprintf("bulkhead.wait.duration{name=%s,outcome=%s}", name, outcome)
				p := got.hists[key]
				want := h.Counts()
				if len(p.BucketCounts) == 0 && slices.Max(want) == 0 {
					continue // no such wait, and no series for it (a run whose catch-all rejected nothing)
				}
				if !slices.Equal(p.Bounds, metricstest.Seconds(waitBuckets)) || !slices.Equal(p.BucketCounts, want) {
					t.Errorf("%s: bounds %v counts %v, the test's %v", key, p.Bounds, p.BucketCounts, want)
				}
			}
			key := fmt.Sprintf("bulkhead.call.duration{name=%s}", name)
			p := got.hists[key]
			if want := s.durations.Counts(); !slices.Equal(p.BucketCounts, want) && !(len(p.BucketCounts) == 0 && slices.Max(want) == 0) {
				t.Errorf("%s: counts %v, the test's %v", key, p.BucketCounts, want)
			}
			for inst, want := range map[string]int64{"available_concurrent_calls": int64(maxAllowed(name)), "max_allowed_concurrent_calls": int64(maxAllowed(name)), "queued_calls": 0} {
				key := fmt.Sprintf("bulkhead.%s{name=%s}", inst, name)
				if v, ok := got.ints[key]; !ok || v != want {
					t.Errorf("%s = %d (present %v), want %d", key, v, ok, want)
				}
			}
		}
		for key, want := range map[string]int64{
			"bulkhead.registry.evictions{}":       int64(st.Evictions),
			"bulkhead.registry.catch_all_calls{}": int64(st.CatchAllCalls),
			"bulkhead.registry.bulkheads{}":       int64(st.Bulkheads),
		} {
			if v := got.ints[key]; v != want {
				t.Errorf("%s = %d, want %d", key, v, want)
			}
		}
		for key := range got.ints {
			if strings.Contains(key, "name=key-") {
				t.Errorf("a series of an evicted key is still observed: %s", key)
			}
		}
	})
}

// maxAllowed is the limit of a checked bulkhead.
func maxAllowed(name string) int {
	if name == "steady" {
		return 2
	}
	return 1
}

func label(r bulkhead.Reason) string { return strings.ReplaceAll(r.String(), " ", "_") }

func reasonOf(label string) bulkhead.Reason {
	for _, r := range []bulkhead.Reason{bulkhead.NoWait, bulkhead.QueueFull, bulkhead.WaitTimeout, bulkhead.Evicted, bulkhead.Unavailable} {
		if strings.ReplaceAll(r.String(), " ", "_") == label {
			return r
		}
	}
	return 0
}

// sumAbove returns how many durations of h are above its first bound.
func sumAbove(h *metricstest.Histogram) uint64 {
	total, cum := h.Cumulative()
	return total - cum[0]
}

// promtoolAccepts fetches url and runs promtool check metrics on it.
func promtoolAccepts(t *testing.T, url string) {
	t.Helper()
	bin := metricstest.RequireTool(t, "promtool")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(string(body))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// collected is one collection of the manual reader, flattened to
// "instrument{attr=value,...}" (attributes in key order).
type collected struct {
	ints  map[string]int64
	hists map[string]metricdata.HistogramDataPoint[float64]
}

func collect(t *testing.T, reader sdkmetric.Reader) collected {
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
					c.ints[m.Name+"{"+attrString(p.Attributes.ToSlice())+"}"] = p.Value
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					c.ints[m.Name+"{"+attrString(p.Attributes.ToSlice())+"}"] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					c.hists[m.Name+"{"+attrString(p.Attributes.ToSlice())+"}"] = p
				}
			}
		}
	}
	return c
}

func attrString(kvs []attribute.KeyValue) string {
	parts := make([]string, len(kvs))
	for i, kv := range kvs {
		parts[i] = string(kv.Key) + "=" + kv.Value.String()
	}
	return strings.Join(parts, ",")
}
