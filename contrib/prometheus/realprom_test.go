package prometheus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rxbulkhead/bulkhead"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// promServer is a Prometheus started by a test.
type promServer struct {
	url string
	cmd *exec.Cmd
}

// startPrometheus starts Debian's prometheus on a free 127.0.0.1 port, with
// a temporary storage directory, scraping target every second, and stops it
// at the end of the test.
func startPrometheus(t *testing.T, target string) *promServer {
	t.Helper()
	bin := requireTool(t, "prometheus")
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: bulkheads
    static_configs:
      - targets: [%q]
`, target)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &promServer{url: "http://" + addr, cmd: cmd}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		log.Close()
		if t.Failed() {
			out, _ := os.ReadFile(log.Name())
			t.Logf("prometheus log:\n%s", out)
		}
	})
	return p
}

// sample is one series of an instant vector.
type sample struct {
	Metric map[string]string
	Value  float64
}

// query runs an instant PromQL query.
func (p *promServer) query(t *testing.T, q string) ([]sample, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/api/v1/query?query="+url.QueryEscape(q), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", q, body.Error)
	}
	var out []sample
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, sample{Metric: r.Metric, Value: v})
	}
	return out, nil
}

// one runs q, which must give exactly one series, and returns its value.
func (p *promServer) one(t *testing.T, q string) float64 {
	t.Helper()
	s, err := p.query(t, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 1 {
		t.Fatalf("%s: %d series, want 1: %v", q, len(s), s)
	}
	return s[0].Value
}

// await polls q until it gives one series of value want, or fails at the
// deadline.
func (p *promServer) await(t *testing.T, q string, want float64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last []sample
	for time.Now().Before(deadline) {
		s, err := p.query(t, q)
		if err == nil && len(s) == 1 && s[0].Value == want {
			return
		}
		last = s
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: still %v after %v, want %v", q, last, within, want)
}

// quantile is histogram_quantile over the cumulative counts of bounds (the
// last count is +Inf), as Prometheus computes it.
func quantile(q float64, bounds []float64, cum []uint64) float64 {
	total := float64(cum[len(cum)-1])
	rank := q * total
	i := slices.IndexFunc(cum, func(c uint64) bool { return float64(c) >= rank })
	if i == len(bounds) { // the +Inf bucket
		return bounds[len(bounds)-1]
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = bounds[i-1], float64(cum[i-1])
	}
	return lower + (bounds[i]-lower)*(rank-below)/(float64(cum[i])-below)
}

// histogramOf counts durations into the buckets of bounds, as the
// collector does, from the test's own listeners.
type histogramOf struct {
	mu     sync.Mutex
	bounds []time.Duration
	counts []uint64 // per bucket, the last +Inf
}

func newHistogramOf(bounds []time.Duration) *histogramOf {
	return &histogramOf{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogramOf) add(d time.Duration) {
	i, _ := slices.BinarySearch(h.bounds, d)
	h.mu.Lock()
	h.counts[i]++
	h.mu.Unlock()
}

// cumulative returns the total and the cumulative counts.
func (h *histogramOf) cumulative() (uint64, []uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var total uint64
	cum := make([]uint64, len(h.counts))
	for i, n := range h.counts {
		total += n
		cum[i] = total
	}
	return total, cum
}

func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// A real Prometheus scrapes a test server whose Semaphores and pool run
// under load, and its PromQL answers match what the test did: the 99th
// percentile of the waits and of the call durations, the rejections by
// reason (counts and rates), the permits.
func TestRealPrometheusAnswersPromQLAboutTheLoadTheTestRan(t *testing.T) {
	buckets := []time.Duration{time.Millisecond, 5 * time.Millisecond, 25 * time.Millisecond, 100 * time.Millisecond, time.Second}
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

	// What the test did, from its own listeners.
	var mu sync.Mutex
	handoffWaits := make([]uint64, len(buckets)+1)
	reasons := map[bulkhead.Reason]int{}
	handoff.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallPermitted {
			i, _ := slices.BinarySearch(buckets, e.Wait)
			mu.Lock()
			handoffWaits[i]++
			mu.Unlock()
		}
	})
	mixed.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallRejected {
			mu.Lock()
			reasons[e.Reason]++
			mu.Unlock()
		}
	})
	var poolRejected atomic.Int64
	// The call durations the test's listeners see, by bulkhead: handoff's
	// through FinishCallStarted, mixed's through the registry's Lease,
	// the pool's tasks.
	durations := map[string]*histogramOf{}
	for _, name := range []string{"handoff", "mixed", "reports"} {
		durations[name] = newHistogramOf(durationBuckets)
	}
	recordDuration := func(e bulkhead.Event) {
		if e.Type == bulkhead.CallFinished && e.CallDuration > 0 {
			durations[e.Name].add(e.CallDuration)
		}
	}
	handoff.OnEvent(recordDuration)
	mixed.OnEvent(recordDuration)
	reports.OnEvent(recordDuration)

	c := bulkheadprom.NewCollector(r, bulkheadprom.WithPools(preg), bulkheadprom.WithWaitBuckets(buckets...),
		bulkheadprom.WithCallDurationBuckets(durationBuckets...))
	defer c.Close()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()

	prom := startPrometheus(t, l.Addr().String())
	// A first scrape sees every series at zero, so rate and increase
	// cover every call of the load.
	prom.await(t, `up{job="bulkheads"}`, 1, 20*time.Second)
	prom.await(t, `sum(bulkhead_calls_total{name="mixed"})`, 0, 5*time.Second)

	// The load, for 3 s: two callers hand handoff's one permit to each
	// other (each holds it ~2 ms, so each waits ~2 ms); four callers share
	// mixed's permit (held ~5 ms; a queue of 2 and a 7 ms wait give
	// queue_full and wait_timeout), and a fifth only tries (no_wait);
	// three submitters share the pool's one worker and one queue slot
	// (queue_full). A rejected caller backs off 1 ms.
	ctx, stop := context.WithTimeout(context.Background(), 3*time.Second)
	defer stop()
	var load sync.WaitGroup
	run := func(f func()) {
		load.Add(1)
		go func() {
			defer load.Done()
			for ctx.Err() == nil {
				f()
			}
		}()
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
	for range 4 {
		run(func() {
			if lease, err := r.AcquirePermission(context.Background(), "mixed", bulkhead.CallOptions{}); err == nil {
				time.Sleep(5 * time.Millisecond)
				lease.FinishCall()
			} else {
				time.Sleep(time.Millisecond)
			}
		})
	}
	run(func() {
		if lease, err := r.TryAcquirePermission("mixed", bulkhead.CallOptions{}); err == nil {
			lease.FinishCall()
		}
		time.Sleep(time.Millisecond)
	})
	for range 3 {
		run(func() {
			f := pool.Submit(context.Background(), reports, func(context.Context) (int, error) {
				time.Sleep(3 * time.Millisecond)
				return 0, nil
			})
			if _, err := f.Get(context.Background()); err != nil {
				poolRejected.Add(1)
				time.Sleep(time.Millisecond)
			}
		})
	}
	load.Wait()

	mu.Lock()
	defer mu.Unlock()
	var granted uint64
	cum := make([]uint64, len(handoffWaits))
	for i, n := range handoffWaits {
		granted += n
		cum[i] = granted
	}
	// Wait for a scrape after the load.
	prom.await(t, `bulkhead_wait_duration_seconds_count{name="handoff",outcome="granted"}`, float64(granted), 10*time.Second)
	for _, reason := range []bulkhead.Reason{bulkhead.NoWait, bulkhead.QueueFull, bulkhead.WaitTimeout} {
		label := map[bulkhead.Reason]string{bulkhead.NoWait: "no_wait", bulkhead.QueueFull: "queue_full", bulkhead.WaitTimeout: "wait_timeout"}[reason]
		prom.await(t, fmt.Sprintf(`bulkhead_rejected_calls_total{name="mixed",reason=%q}`, label), float64(reasons[reason]), 5*time.Second)
		if reasons[reason] == 0 {
			t.Errorf("the load made no %s rejection: the test checks nothing for it", label)
		}
	}
	prom.await(t, `bulkhead_rejected_calls_total{name="reports",reason="queue_full"}`, float64(poolRejected.Load()), 5*time.Second)
	if poolRejected.Load() == 0 {
		t.Error("the load made no pool rejection: the test checks nothing for it")
	}

	// The 99th percentile of handoff's waits, as the test computes it from
	// its own observations with the same buckets.
	want := quantile(0.99, seconds(buckets), cum)
	got := prom.one(t, `histogram_quantile(0.99, rate(bulkhead_wait_duration_seconds_bucket{name="handoff",outcome="granted"}[30s]))`)
	if math.Abs(got-want) > 1e-9*want {
		t.Errorf("p99 of handoff's waits: Prometheus %v, the test's own observations %v (buckets %v)", got, want, cum)
	}
	// The rejection rate by reason: each reason's share of mixed's
	// rejections equals the test's.
	total := float64(reasons[bulkhead.NoWait] + reasons[bulkhead.QueueFull] + reasons[bulkhead.WaitTimeout] + reasons[bulkhead.Evicted])
	rates, err := prom.query(t, `sum by (reason) (rate(bulkhead_rejected_calls_total{name="mixed"}[30s])) / scalar(sum(rate(bulkhead_rejected_calls_total{name="mixed"}[30s])))`)
	if err != nil {
		t.Fatal(err)
	}
	byLabel := map[string]bulkhead.Reason{"no_wait": bulkhead.NoWait, "queue_full": bulkhead.QueueFull, "wait_timeout": bulkhead.WaitTimeout, "evicted": bulkhead.Evicted}
	if len(rates) != 4 {
		t.Fatalf("rejection shares: %v, want 4 reasons", rates)
	}
	for _, s := range rates {
		share := float64(reasons[byLabel[s.Metric["reason"]]]) / total
		if math.Abs(s.Value-share) > 1e-9 {
			t.Errorf("share of %s: Prometheus %v, the test %v", s.Metric["reason"], s.Value, share)
		}
	}
	// The call durations: every timed call counted, and the 99th
	// percentile of each bulkhead's, as the test computes it from its own
	// observations with the same buckets.
	for _, name := range []string{"handoff", "mixed", "reports"} {
		n, cum := durations[name].cumulative()
		if n == 0 {
			t.Errorf("%s: no timed call: the test checks nothing for it", name)
			continue
		}
		prom.await(t, fmt.Sprintf(`bulkhead_call_duration_seconds_count{name=%q}`, name), float64(n), 5*time.Second)
		want := quantile(0.99, seconds(durationBuckets), cum)
		got := prom.one(t, fmt.Sprintf(`histogram_quantile(0.99, rate(bulkhead_call_duration_seconds_bucket{name=%q}[30s]))`, name))
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("p99 of %s's call durations: Prometheus %v, the test's own observations %v (buckets %v)", name, got, want, cum)
		}
		t.Logf("%s: %d timed calls, p99 %.4fs", name, n, got)
	}
	// Every finished call of handoff and mixed was timed (FinishCallStarted,
	// the Lease), and every task of the pool.
	for _, name := range []string{"handoff", "mixed", "reports"} {
		if v := prom.one(t, fmt.Sprintf(`sum without (kind) (bulkhead_calls_total{name=%q,kind="finished"}) - bulkhead_call_duration_seconds_count{name=%[1]q}`, name)); v != 0 {
			t.Errorf("%s: %v finished calls without a duration", name, v)
		}
	}
	// The gauges, idle after the load.
	if v := prom.one(t, `bulkhead_available_concurrent_calls{name="reports"}`); v != 1 {
		t.Errorf("reports has %v free workers, want 1", v)
	}
	t.Logf("handoff: %d grants, p99 %.4fs; mixed rejections %v; pool rejections %d", granted, got, reasons, poolRejected.Load())
}
