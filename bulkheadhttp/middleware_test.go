package bulkheadhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
)

// limitedServer starts a loopback server whose partner handler sits behind
// the middleware, keyed by the X-Tenant header.
func limitedServer(t *testing.T, reg *bulkhead.Registry, p *partner, opts ...bulkheadhttp.Option) *httptest.Server {
	t.Helper()
	opts = append([]bulkheadhttp.Option{bulkheadhttp.WithKey(func(r *http.Request) string { return r.Header.Get("X-Tenant") })}, opts...)
	mw, err := bulkheadhttp.NewMiddleware(reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mw(p.handler()))
	t.Cleanup(func() {
		p.Release()
		srv.Close()
	})
	return srv
}

// newHandlerPartner returns a partner whose handler is not served by itself
// but mounted behind a middleware.
func newHandlerPartner(hold bool, body string) *partner {
	p := &partner{arrived: make(chan struct{}, 1024), release: make(chan struct{}), body: body}
	if !hold {
		p.Release()
	}
	return p
}

func tenantGet(ctx context.Context, t *testing.T, c *http.Client, url, tenant string) <-chan result {
	t.Helper()
	ch := make(chan result, 1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Tenant", tenant)
	go func() {
		resp, err := c.Do(req)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			err = errors.New(resp.Status + " " + resp.Header.Get("Retry-After") + " " + strings.TrimSpace(string(b)))
		}
		ch <- result{body: string(b), err: err}
	}()
	return ch
}

func bareClient(t *testing.T) *http.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 100
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func TestMiddlewareServesAtMostTheLimitAtOnce(t *testing.T) {
	const limit, calls = 3, 40
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: limit, MaxWaitDuration: waitTimeout, MaxQueuedCalls: bulkhead.Unbounded})
	p := newHandlerPartner(true, "ok")
	srv := limitedServer(t, reg, p)
	c := bareClient(t)

	var results []<-chan result
	for range calls {
		results = append(results, tenantGet(context.Background(), t, c, srv.URL, "acme"))
	}
	p.awaitArrivals(t, limit)
	bh, _ := reg.Find("acme")
	awaitQueued(t, bh, calls-limit) // everyone else waits before the handler
	if got := p.received.Load(); got != limit {
		t.Errorf("handler entered %d times with %d permits", got, limit)
	}
	p.Release()
	for _, ch := range results {
		if r := await(t, ch); r.err != nil {
			t.Error(r.err)
		}
	}
	if got := p.peak.Load(); got > limit {
		t.Errorf("the handler ran %d times at once; the limit is %d", got, limit)
	}
}

func TestMiddlewareRejectsWith503AndRetryAfterWithoutRunningTheHandler(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	p := newHandlerPartner(true, "ok")
	srv := limitedServer(t, reg, p, bulkheadhttp.WithRetryAfter(1500*time.Millisecond))
	c := bareClient(t)

	first := tenantGet(context.Background(), t, c, srv.URL, "acme")
	p.awaitArrivals(t, 1)
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("X-Tenant", "acme")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("rejected request: %s, Retry-After %q; want 503 and 2", resp.Status, resp.Header.Get("Retry-After"))
	}
	if want := (&bulkhead.FullError{Name: "acme", Reason: bulkhead.NoWait}).Error(); !strings.Contains(string(b), want) {
		t.Errorf("rejection body %q does not name the bulkhead", b)
	}
	// Another tenant is not affected.
	other := tenantGet(context.Background(), t, c, srv.URL, "globex")
	p.awaitArrivals(t, 1)
	p.Release()
	for _, ch := range []<-chan result{first, other} {
		if r := await(t, ch); r.err != nil {
			t.Error(r.err)
		}
	}
	if got := p.received.Load(); got != 2 {
		t.Errorf("handler ran %d times, want 2 (the rejected request must not reach it)", got)
	}
}

func TestMiddlewareCustomRejectHandlerReceivesTheFullError(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	p := newHandlerPartner(true, "ok")
	srv := limitedServer(t, reg, p, bulkheadhttp.WithRejectHandler(func(w http.ResponseWriter, r *http.Request, err error) {
		var full *bulkhead.FullError
		if errors.As(err, &full) {
			w.Header().Set("X-Full", full.Name+" "+full.Reason.String())
		}
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	c := bareClient(t)
	first := tenantGet(context.Background(), t, c, srv.URL, "acme")
	p.awaitArrivals(t, 1)
	r := await(t, tenantGet(context.Background(), t, c, srv.URL, "acme"))
	if r.err == nil || !strings.HasPrefix(r.err.Error(), "429") {
		t.Errorf("rejected request: %v, want 429", r.err)
	}
	p.Release()
	if r := await(t, first); r.err != nil {
		t.Error(r.err)
	}
}

func TestMiddlewareQueuedRequestWithdrawnWhenTheClientGoesAway(t *testing.T) {
	for _, proto := range []string{"HTTP/1.1", "HTTP/2"} {
		t.Run(proto, func(t *testing.T) {
			reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
			ev := events(t, reg)
			p := newHandlerPartner(true, "ok")
			mw, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithKey(func(*http.Request) string { return "acme" }))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewUnstartedServer(mw(p.handler()))
			var c *http.Client
			if proto == "HTTP/2" {
				srv.EnableHTTP2 = true
				srv.StartTLS()
				c = srv.Client()
			} else {
				srv.Start()
				c = bareClient(t)
			}
			t.Cleanup(func() {
				p.Release()
				srv.Close()
			})
			t.Cleanup(c.CloseIdleConnections)

			first := tenantGet(context.Background(), t, c, srv.URL, "")
			p.awaitArrivals(t, 1)
			ctx, cancel := context.WithCancel(context.Background())
			queued := tenantGet(ctx, t, c, srv.URL, "")
			bh, _ := reg.Find("acme")
			awaitQueued(t, bh, 1)
			cancel() // the client goes away
			awaitEvent(t, ev, bulkhead.CallCancelled)
			if m := bh.Metrics(); m.QueuedCalls != 0 || m.InFlightCalls != 1 {
				t.Errorf("after the client left: %d queued, %d in flight; want 0 and 1", m.QueuedCalls, m.InFlightCalls)
			}
			if r := await(t, queued); !errors.Is(r.err, context.Canceled) {
				t.Errorf("cancelled request: %v", r.err)
			}
			p.Release()
			if r := await(t, first); r.err != nil {
				t.Fatal(r.err)
			}
			if got := p.received.Load(); got != 1 {
				t.Errorf("handler ran %d times, want 1", got)
			}
		})
	}
}

func TestMiddlewareGivesThePermitBackWhenTheHandlerPanics(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	mw, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithKey(func(*http.Request) string { return "acme" }))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler) // net/http recovers it without logging
	})))
	srv.Start()
	t.Cleanup(srv.Close)
	c := bareClient(t)
	for range 3 {
		if _, err := c.Get(srv.URL); err == nil {
			t.Fatal("a panicking handler answered")
		}
	}
	bh, _ := reg.Find("acme")
	if m := bh.Metrics(); m.InFlightCalls != 0 {
		t.Errorf("%d permits held after panicking handlers", m.InFlightCalls)
	}
}

func TestMiddlewareDefaultKeyIsTheServeMuxRoute(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	mw, err := bulkheadhttp.NewMiddleware(reg)
	if err != nil {
		t.Fatal(err)
	}
	orders := newHandlerPartner(true, "orders")
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{partner}", mw(orders.handler()))
	mux.Handle("GET /health", mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "up") })))
	srv := newServer(t, mux)
	t.Cleanup(orders.Release)
	c := bareClient(t)

	post := make(chan result, 1)
	go func() {
		resp, err := c.Post(srv.URL+"/orders/walmart", "text/plain", strings.NewReader("x"))
		if err == nil {
			resp.Body.Close()
		}
		post <- result{err: err}
	}()
	orders.awaitArrivals(t, 1)
	resp, err := c.Post(srv.URL+"/orders/target", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("second order while the route's permit is held: %s, want 503", resp.Status)
	}
	resp, err = c.Get(srv.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("other route: %s, want 200", resp.Status)
	}
	orders.Release()
	if r := await(t, post); r.err != nil {
		t.Fatal(r.err)
	}
	var names []string
	for _, bh := range reg.All() {
		names = append(names, bh.Name())
	}
	if got := strings.Join(names, ", "); got != "GET /health, POST /orders/{partner}" {
		t.Errorf("bulkheads = %s; want one per route", got)
	}
}

func TestMiddlewareDefaultKeyAroundAWholeMuxFailsWithAHint(t *testing.T) {
	reg := newRegistry(t, bulkhead.DefaultConfig())
	mw, err := bulkheadhttp.NewMiddleware(reg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/orders", func(w http.ResponseWriter, r *http.Request) { t.Error("the handler ran") })
	srv := newServer(t, mw(mux)) // r.Pattern is not set yet where mw runs
	resp, err := bareClient(t).Get(srv.URL + "/orders")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(b), "wrap each handler registered on the mux") {
		t.Errorf("%s %q; want 500 with the hint", resp.Status, b)
	}
}
