package bulkheadhttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
)

// An http.Client whose requests go through one bulkhead per partner host.
func ExampleNewTransport() {
	partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "997 accepted")
	}))
	defer partner.Close()

	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20, MaxWaitDuration: time.Second, MaxQueuedCalls: 100})
	if err != nil {
		panic(err)
	}
	tr, err := bulkheadhttp.NewTransport(nil, reg) // nil: http.DefaultTransport
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: tr}

	resp, err := client.Post(partner.URL, "application/edi-x12", strings.NewReader("ISA*00*..."))
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body) // read to its end: the permit goes back
	resp.Body.Close()
	fmt.Println(string(body))
	fmt.Println("bulkheads:", len(reg.All()))
	// Output:
	// 997 accepted
	// bulkheads: 1
}

// The partner's name comes from the AS2-To header; a rejected request is
// not sent and its error names the partner.
func ExampleWithKey() {
	arrived, release := make(chan struct{}), make(chan struct{})
	partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	defer partner.Close()
	defer close(release)

	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1}) // no wait
	tr, _ := bulkheadhttp.NewTransport(nil, reg, bulkheadhttp.WithKey(func(r *http.Request) string {
		return r.Header.Get("AS2-To")
	}))
	client := &http.Client{Transport: tr}
	post := func() (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, partner.URL, strings.NewReader("ISA*00*..."))
		req.Header.Set("AS2-To", "walmart")
		return client.Do(req)
	}

	sent := make(chan struct{})
	go func() {
		if resp, err := post(); err == nil {
			resp.Body.Close()
		}
		close(sent)
	}()
	<-arrived // the first request holds walmart's only permit
	_, err := post()
	fmt.Println(errors.Is(err, bulkhead.ErrBulkheadFull))
	var full *bulkhead.FullError
	errors.As(err, &full)
	fmt.Println(full)
	release <- struct{}{}
	<-sent
	// Output:
	// true
	// bulkhead "walmart": full, does not permit further calls (no wait)
}

// A server that runs at most 2 requests per tenant at once; more wait up to
// 100 ms, then are answered 503 with Retry-After.
func ExampleNewMiddleware() {
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: 100 * time.Millisecond, MaxQueuedCalls: 100})
	limit, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithKey(func(r *http.Request) string {
		return "tenant-" + r.PathValue("tenant")
	}))
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /{tenant}/orders", limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "accepted")
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, _ := http.Post(srv.URL+"/acme/orders", "text/plain", strings.NewReader("order"))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status, string(body))
	bh, _ := reg.Find("tenant-acme")
	fmt.Println(bh.Metrics().InFlightCalls, "in flight")
	// Output:
	// 200 OK accepted
	// 0 in flight
}

// The default key: one bulkhead per ServeMux route.
func ExamplePattern() {
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 10})
	limit, _ := bulkheadhttp.NewMiddleware(reg) // key: bulkheadhttp.Pattern
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	mux := http.NewServeMux()
	mux.Handle("POST /orders", limit(ok))
	mux.Handle("GET /orders/{id}", limit(ok))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	http.Post(srv.URL+"/orders", "text/plain", nil)
	http.Get(srv.URL + "/orders/42")
	for _, bh := range reg.All() {
		fmt.Println(bh.Name())
	}
	// Output:
	// GET /orders/{id}
	// POST /orders
}

// A rejection answered with 429 instead of 503.
func ExampleWithRejectHandler() {
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1})
	_, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithRejectHandler(func(w http.ResponseWriter, r *http.Request, err error) {
		w.Header().Set("Retry-After", "5")
		http.Error(w, err.Error(), http.StatusTooManyRequests)
	}))
	fmt.Println(err)
	// Output: <nil>
}

// A key whose bulkhead cannot be created fails the request before it is
// sent, with an error naming the partner.
func ExampleWithConfigName() {
	reg, _ := bulkhead.NewRegistry(bulkhead.DefaultConfig(),
		bulkhead.WithConfig("retailers", bulkhead.Config{MaxConcurrentCalls: 50, MaxWaitDuration: time.Second, MaxQueuedCalls: 200}))
	tr, _ := bulkheadhttp.NewTransport(nil, reg,
		bulkheadhttp.WithKey(func(r *http.Request) string { return r.Header.Get("AS2-To") }),
		bulkheadhttp.WithConfigName(func(partner string) string {
			if partner == "walmart" || partner == "target" {
				return "retailers"
			}
			return "suppliers" // not configured: requests to them fail
		}))
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/as2", nil)
	req.Header.Set("AS2-To", "supplier-042")
	_, err := tr.RoundTrip(req)
	fmt.Println(err)
	// Output: bulkhead "supplier-042": unknown config "suppliers" (known: default, retailers)
}

// The default rejection: 503 Service Unavailable, with the wait a client
// should leave before retrying.
func ExampleWithRetryAfter() {
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1})
	arrived, release := make(chan struct{}), make(chan struct{})
	limit, _ := bulkheadhttp.NewMiddleware(reg,
		bulkheadhttp.WithKey(func(*http.Request) string { return "orders" }),
		bulkheadhttp.WithRetryAfter(30*time.Second))
	srv := httptest.NewServer(limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	})))
	defer srv.Close()

	go func() {
		if resp, err := http.Get(srv.URL); err == nil {
			resp.Body.Close()
		}
	}()
	<-arrived // the only permit is taken
	resp, _ := http.Get(srv.URL)
	resp.Body.Close()
	fmt.Println(resp.Status, "Retry-After:", resp.Header.Get("Retry-After"))
	close(release)
	// Output: 503 Service Unavailable Retry-After: 30
}

// Requests without a tenant are answered 400 instead of 500.
func ExampleWithErrorHandler() {
	reg, _ := bulkhead.NewRegistry(bulkhead.DefaultConfig())
	limit, _ := bulkheadhttp.NewMiddleware(reg,
		bulkheadhttp.WithKey(func(r *http.Request) string { return r.Header.Get("X-Tenant") }),
		bulkheadhttp.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
			var ke *bulkheadhttp.KeyError
			if errors.As(err, &ke) {
				http.Error(w, "X-Tenant header required", http.StatusBadRequest)
				return
			}
			http.Error(w, "internal error", http.StatusInternalServerError)
		}))
	srv := httptest.NewServer(limit(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	defer srv.Close()

	resp, _ := http.Get(srv.URL)
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output: 400 Bad Request
}

// Host, the default key of a Transport, names a partner by its URL's host.
func ExampleHost() {
	req, _ := http.NewRequest(http.MethodPost, "https://as2.walmart.example:4080/inbound", nil)
	fmt.Println(bulkheadhttp.Host(req))
	// Output: as2.walmart.example:4080
}

func ExampleKeyError() {
	reg, _ := bulkhead.NewRegistry(bulkhead.DefaultConfig())
	tr, _ := bulkheadhttp.NewTransport(nil, reg, bulkheadhttp.WithKey(func(r *http.Request) string { return r.Header.Get("AS2-To") }))
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/as2", nil) // no AS2-To
	_, err := tr.RoundTrip(req)
	var ke *bulkheadhttp.KeyError
	fmt.Println(errors.As(err, &ke), err)
	// Output: true bulkheadhttp: the key function returned an empty bulkhead name for POST http://127.0.0.1:1/as2
}

// Posting without a goroutine per waiting document: Go returns at once; a
// document that waits for its partner's permit is a record in the queue,
// and done runs when it was answered, rejected or withdrawn.
func ExampleTransport_Go() {
	partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "MDN processed")
	}))
	defer partner.Close()

	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Second, MaxQueuedCalls: 1000})
	tr, _ := bulkheadhttp.NewTransport(nil, reg)
	client := &http.Client{Transport: tr}

	var wg sync.WaitGroup
	var answered atomic.Int64
	for range 100 {
		req, _ := http.NewRequest(http.MethodPost, partner.URL, strings.NewReader("ISA*00*..."))
		wg.Add(1)
		tr.Go(client, req, func(resp *http.Response, err error) {
			defer wg.Done()
			if err != nil {
				fmt.Println("not sent:", err)
				return
			}
			defer resp.Body.Close() // gives the permit back
			if b, _ := io.ReadAll(resp.Body); string(b) == "MDN processed" {
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	fmt.Println(answered.Load(), "answered")
	// Output: 100 answered
}

// A request whose context ends while it waits for a permit (here an outer
// timeout of 10 ms, while another call holds the only permit) is answered
// with the rejection, never 200: the reject handler tells it apart by its
// *WithdrawnError.
func ExampleWithdrawnError() {
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Minute, MaxQueuedCalls: 10})
	limit, _ := bulkheadhttp.NewMiddleware(reg,
		bulkheadhttp.WithKey(func(*http.Request) string { return "orders" }),
		bulkheadhttp.WithRejectHandler(func(w http.ResponseWriter, r *http.Request, err error) {
			var withdrawn *bulkheadhttp.WithdrawnError
			if errors.As(err, &withdrawn) {
				http.Error(w, "gave up waiting for "+withdrawn.Name, http.StatusServiceUnavailable)
				return
			}
			http.Error(w, err.Error(), http.StatusTooManyRequests)
		}))
	h := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "accepted") }))

	orders, _ := reg.Get("orders")
	orders.TryAcquirePermission() // another call holds the only permit
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader("order")).WithContext(ctx))
	orders.ReleasePermission()
	fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	// Output: 503 gave up waiting for orders
}

// Keyed by tenant, a tenant over its share is told 429 Too Many Requests
// instead of the default 503.
func ExampleWithRejectStatus() {
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1})
	limit, err := bulkheadhttp.NewMiddleware(reg,
		bulkheadhttp.WithKey(func(r *http.Request) string { return "tenant-" + r.Header.Get("X-Tenant") }),
		bulkheadhttp.WithRejectStatus(http.StatusTooManyRequests))
	if err != nil {
		panic(err)
	}
	h := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "accepted") }))

	acme, _ := reg.Get("tenant-acme")
	acme.TryAcquirePermission() // acme's only permit is in use
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader("order"))
	req.Header.Set("X-Tenant", "acme")
	h.ServeHTTP(rec, req)
	acme.ReleasePermission()
	fmt.Println(rec.Code, "Retry-After:", rec.Header().Get("Retry-After"))

	_, err = bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithRejectStatus(http.StatusInternalServerError))
	fmt.Println(err)
	// Output:
	// 429 Retry-After: 1
	// bulkheadhttp: NewMiddleware: WithRejectStatus: status must be 503 (Service Unavailable) or 429 (Too Many Requests), got 500
}
