package bulkheadhttp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Transport: "The permit is held while the partner works on the call ...
// or until the base transport fails. It is then given back exactly once."
// A base that breaks http.RoundTripper's contract with a nil response and
// a nil error has failed: RoundTrip gives the permit back and returns an
// error that says so (http.Client.Do's own check would otherwise meet a
// nil dereference inside RoundTrip, with the permit kept).
func TestHostileBaseReturningANilResponseWithoutAnErrorGivesThePermitBack(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	base := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil })
	tr, err := bulkheadhttp.NewTransport(base, reg, bulkheadhttp.WithKey(func(*http.Request) string { return "walmart" }))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // the limit is 1: each call must have given its permit back
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:1/as2", nil)
		var resp *http.Response
		var rtErr error
		if got := testkit.RunToEnd(func() { resp, rtErr = tr.RoundTrip(req) }); got != nil {
			t.Fatalf("RoundTrip ended with %v, want a return", got)
		}
		if resp != nil || rtErr == nil || !strings.Contains(rtErr.Error(), "returned a nil *Response with a nil error") {
			t.Fatalf("RoundTrip = %v, %v; want no response and an error naming the nil response", resp, rtErr)
		}
		bh, _ := reg.Find("walmart")
		if m := bh.Metrics(); m.InFlightCalls != 0 {
			t.Fatalf("%d in flight after the base failed, want 0", m.InFlightCalls)
		}
	}
}

// closePanics is a response body whose Close panics (a base transport's
// own body type).
type closePanics struct{ io.Reader }

func (closePanics) Close() error { panic("body close exploded") }

// Transport: the permit is given back at "the first of the response body
// being closed, ...". A body whose own Close panics has been closed by
// the caller all the same: the permit comes back and the panic goes on.
func TestHostileResponseBodyWhoseClosePanicsGivesThePermitBack(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: closePanics{strings.NewReader("payload")}, Request: r}, nil
	})
	tr, err := bulkheadhttp.NewTransport(base, reg, bulkheadhttp.WithKey(func(*http.Request) string { return "walmart" }))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:1/as2", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := testkit.RunToEnd(func() { resp.Body.Close() }); got != "body close exploded" {
			t.Fatalf("Close ended with %v, want the body's panic", got)
		}
		bh, _ := reg.Find("walmart")
		if m := bh.Metrics(); m.InFlightCalls != 0 {
			t.Fatalf("%d in flight after Close, want 0", m.InFlightCalls)
		}
	}
}
