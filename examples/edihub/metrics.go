package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rxbulkhead/bulkhead"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
)

// metricsServer serves the demo's /metrics while it runs: one
// contrib/prometheus Collector per run (the bulkheadhttp run's Registry,
// the goroutine pool run's pool.Registry), each under the label run, so
// that one scrape shows both kinds with the same metric set. A run's
// collector stays registered after it ends, with its final counts.
type metricsServer struct {
	url string
	reg *prometheus.Registry
	srv *http.Server

	mu               sync.Mutex
	collectors       []*bulkheadprom.Collector
	budgetCollectors []*bulkheadprom.BudgetCollector // the month-end act's budget
}

// startMetrics listens on addr (host:port; port 0 picks a free one) and
// serves /metrics until close.
func startMetrics(addr string) (*metricsServer, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics %s: %w", addr, err)
	}
	m := &metricsServer{url: "http://" + l.Addr().String() + "/metrics", reg: prometheus.NewRegistry()}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = m.srv.Serve(l) }()
	return m, nil
}

// register exports the bulkheads of src under run=mode.
func (m *metricsServer) register(mode string, src bulkhead.MetricsSource) error {
	c := bulkheadprom.NewCollector(src)
	if err := prometheus.WrapRegistererWith(prometheus.Labels{"run": mode}, m.reg).Register(c); err != nil {
		c.Close()
		return err
	}
	m.mu.Lock()
	m.collectors = append(m.collectors, c)
	m.mu.Unlock()
	return nil
}

// scrape fetches /metrics as Prometheus would and returns the sample lines
// of the bulkhead name whose metric is one of names, in the order of the
// exposition.
func (m *metricsServer) scrape(name string, names ...string) ([]string, error) {
	return m.scrapeWhere(`name="`+name+`"`, names...)
}

// scrapeWhere fetches /metrics and returns the sample lines that contain
// label (`budget="hub"`) and whose metric is one of names.
func (m *metricsServer) scrapeWhere(label string, names ...string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New("GET " + m.url + ": " + resp.Status)
	}
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		metric, _, _ := strings.Cut(line, "{")
		if strings.HasPrefix(line, "#") || !strings.Contains(line, label) {
			continue
		}
		for _, n := range names {
			if metric == n {
				out = append(out, line)
			}
		}
	}
	return out, sc.Err()
}

// close stops serving and counting.
func (m *metricsServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.collectors {
		c.Close()
	}
	for _, c := range m.budgetCollectors {
		c.Close()
	}
}

// walmartMetrics are the series printMetrics shows: walmart's rejections by
// reason, how long its granted calls waited, and how long they ran.
var walmartMetrics = []string{
	"bulkhead_rejected_calls_total",
	"bulkhead_wait_duration_seconds_count", "bulkhead_wait_duration_seconds_sum",
	"bulkhead_call_duration_seconds_count", "bulkhead_call_duration_seconds_sum",
}

// printMetrics prints slow's lines of a scrape of /metrics at the end of the
// runs.
func printMetrics(out io.Writer, m *metricsServer, slow string) error {
	lines, err := m.scrape(slow, walmartMetrics...)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%s (%s's series, scraped at the end):\n", m.url, slow)
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "bulkhead_rejected_calls_total") && strings.HasSuffix(l, " 0"):
			continue // the reasons that did not happen
		case strings.Contains(l, `outcome="rejected"`):
			continue // the rejections' waits: the queue_full line counts them
		}
		fmt.Fprintf(out, "  %s\n", l)
	}
	m.mu.Lock()
	budgets := len(m.budgetCollectors)
	m.mu.Unlock()
	if budgets == 0 {
		return nil
	}
	lines, err = m.scrapeWhere(`budget="hub"`, budgetMetrics...)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nthe month-end budget's series (contrib/prometheus NewBudgetCollector):\n")
	for _, l := range lines {
		if strings.HasSuffix(l, " 0") || strings.Contains(l, `kind="finished"`) {
			continue // what did not happen; finished equals permitted
		}
		fmt.Fprintf(out, "  %s\n", l)
	}
	return nil
}

// budgetMetrics are the series of the month-end budget printMetrics shows:
// its calls and permits granted per class, its rejections, its waits.
var budgetMetrics = []string{
	"bulkhead_budget_calls_total", "bulkhead_budget_granted_permits_total", "bulkhead_budget_rejected_calls_total",
	"bulkhead_budget_wait_duration_seconds_count", "bulkhead_budget_wait_duration_seconds_sum",
}

// registerBudget exports a hub budget under run=mode.
func (m *metricsServer) registerBudget(mode string, b *bulkhead.Budget) error {
	c := bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{b})
	if err := prometheus.WrapRegistererWith(prometheus.Labels{"run": mode}, m.reg).Register(c); err != nil {
		c.Close()
		return err
	}
	m.mu.Lock()
	m.budgetCollectors = append(m.budgetCollectors, c)
	m.mu.Unlock()
	return nil
}
