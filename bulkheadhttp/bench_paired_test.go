package bulkheadhttp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
)

// The paired benchmarks measure an overhead of well under 1 % of a loopback
// request on a machine whose speed drifts by more than that within a
// second: each iteration sends one request the bare way and one through the
// bulkhead, in alternating order, timing each, so that drift falls on both
// alike. Both requests share one client connection and one server, so the
// wrapper is the only difference. They report the median time of each and
// the overhead of the medians in percent (the median, because a stall of the
// machine during one request would otherwise weigh on one side only).

func pairedGets(b *testing.B, bare, limited *http.Client, bareURL, limitedURL string) {
	get := func(c *http.Client, url string) time.Duration {
		start := time.Now()
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(start)
	}
	get(bare, bareURL) // the connections
	get(limited, limitedURL)
	var tBare, tLimited []time.Duration
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		if i%2 == 0 {
			tBare = append(tBare, get(bare, bareURL))
			tLimited = append(tLimited, get(limited, limitedURL))
		} else {
			tLimited = append(tLimited, get(limited, limitedURL))
			tBare = append(tBare, get(bare, bareURL))
		}
		i++
	}
	mBare, mLimited := median(tBare), median(tLimited)
	b.ReportMetric(float64(mBare.Nanoseconds()), "bare-ns/req")
	b.ReportMetric(float64(mLimited.Nanoseconds()), "bulkhead-ns/req")
	b.ReportMetric(100*(float64(mLimited)/float64(mBare)-1), "overhead-%")
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// BenchmarkTransportPaired: GET to one loopback server with an
// http.Transport and with a bulkheadhttp.Transport over the same one (a
// free permit each time).
func BenchmarkTransportPaired(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(trivial))
	defer srv.Close()
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		b.Fatal(err)
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	tr, err := bulkheadhttp.NewTransport(base, reg)
	if err != nil {
		b.Fatal(err)
	}
	pairedGets(b, &http.Client{Transport: base}, &http.Client{Transport: tr}, srv.URL, srv.URL)
}

// BenchmarkMiddlewarePaired: GET to a loopback httptest server, to a route
// with the trivial handler and to one with the trivial handler behind the
// middleware.
func BenchmarkMiddlewarePaired(b *testing.B) {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		b.Fatal(err)
	}
	mw, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithKey(func(*http.Request) string { return "orders" }))
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/bare", trivial)
	mux.Handle("/limited", mw(http.HandlerFunc(trivial)))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	pairedGets(b, c, c, srv.URL+"/bare", srv.URL+"/limited")
}
