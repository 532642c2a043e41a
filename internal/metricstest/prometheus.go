package metricstest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Prometheus is a Prometheus server started by a test.
type Prometheus struct {
	URL string // http://127.0.0.1:port
}

// StartPrometheus starts Debian's prometheus on a free 127.0.0.1 port, with
// a temporary storage directory, scraping target (host:port, path /metrics)
// every second, and stops it at the end of the test (SIGINT, then SIGKILL
// after 10 s); its log is printed if the test failed.
func StartPrometheus(t testing.TB, target string) *Prometheus {
	t.Helper()
	bin := RequireTool(t, "prometheus")
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
	return &Prometheus{URL: "http://" + addr}
}

// Sample is one series of an instant vector.
type Sample struct {
	Metric map[string]string
	Value  float64
}

// Query runs an instant PromQL query (bounded by 5 s).
func (p *Prometheus) Query(q string) ([]Sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/query?query="+url.QueryEscape(q), nil)
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
	var out []Sample
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, Sample{Metric: r.Metric, Value: v})
	}
	return out, nil
}

// One runs q, which must give exactly one series, and returns its value.
func (p *Prometheus) One(t testing.TB, q string) float64 {
	t.Helper()
	s, err := p.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 1 {
		t.Fatalf("%s: %d series, want 1: %v", q, len(s), s)
	}
	return s[0].Value
}

// Await polls q until it gives one series of value want, or fails the test
// after within.
func (p *Prometheus) Await(t testing.TB, q string, want float64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last []Sample
	for time.Now().Before(deadline) {
		s, err := p.Query(q)
		if err == nil && len(s) == 1 && s[0].Value == want {
			return
		}
		last = s
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: still %v after %v, want %v", q, last, within, want)
}
