package bulkheadhttp_test

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// roundTripFunc is a base transport made of a func.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A base transport that panics (recovered by the caller, as net/http's
// server does around a handler) or calls runtime.Goexit (t.FailNow in a
// fake transport): the permit RoundTrip took comes back.
func TestTransportBaseThatPanicsOrExitsGivesThePermitBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		base roundTripFunc
		want any
	}{
		{"panic", func(*http.Request) (*http.Response, error) { panic("base transport") }, "base transport"},
		{"Goexit", func(*http.Request) (*http.Response, error) { runtime.Goexit(); return nil, nil }, testkit.Goexited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
			tr, err := bulkheadhttp.NewTransport(tc.base, reg, bulkheadhttp.WithKey(func(*http.Request) string { return "walmart" }))
			if err != nil {
				t.Fatal(err)
			}
			for range 3 { // the limit is 1: each call must have given its permit back
				req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:1/as2", nil)
				if got := testkit.RunToEnd(func() { tr.RoundTrip(req) }); got != tc.want {
					t.Fatalf("RoundTrip ended with %v, want %v (the base's own end goes on)", got, tc.want)
				}
				bh, _ := reg.Find("walmart")
				if m := bh.Metrics(); m.InFlightCalls != 0 {
					t.Fatalf("after a base that ended with %v: %d in flight, want 0", tc.want, m.InFlightCalls)
				}
			}
		})
	}
}

// Go's done that calls runtime.Goexit (t.FailNow) without closing the body,
// on a request whose context never ends: Go closes the body, so the permit
// comes back.
func TestTransportGoDoneThatExitsGivesThePermitBack(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	p := newPartner(t, false, "ok")
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	tr, err := bulkheadhttp.NewTransport(base, reg)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, tr)
	req, _ := http.NewRequest(http.MethodGet, p.URL, nil)
	called := make(chan error, 1)
	tr.Go(c, req, func(resp *http.Response, err error) {
		called <- err
		runtime.Goexit()
	})
	if err := <-called; err != nil {
		t.Fatal(err)
	}
	bh, _ := reg.Find(hostOf(t, p.URL))
	awaitInFlight(t, bh, 0)
}

// A handler that calls runtime.Goexit behind the middleware: the permit
// comes back (the deferred FinishCall).
func TestMiddlewareHandlerThatExitsGivesThePermitBack(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	mw, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithKey(func(*http.Request) string { return "orders" }))
	if err != nil {
		t.Fatal(err)
	}
	h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { runtime.Goexit() }))
	for range 3 {
		rec := httptest.NewRecorder()
		if got := testkit.RunToEnd(func() { h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil)) }); got != testkit.Goexited {
			t.Fatalf("ServeHTTP ended with %v, want the handler's Goexit", got)
		}
		if rec.Code == http.StatusServiceUnavailable {
			t.Fatal("the permit of the exited handler was not given back")
		}
	}
	bh, _ := reg.Find("orders")
	if m := bh.Metrics(); m.InFlightCalls != 0 {
		t.Errorf("%d in flight after exiting handlers, want 0", m.InFlightCalls)
	}
}
