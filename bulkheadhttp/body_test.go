package bulkheadhttp_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rxbulkhead/bulkhead"
)

// bigBody is larger than any buffer between the server and the client, so a
// partial read leaves most of it on the wire.
var bigBody = strings.Repeat("ISA*00*          *00*          *ZZ*HUB*ZZ*WALMART~\n", 20000)

func TestTransportBodyReadPartlyThenClosedGivesThePermitBackOnce(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	done := finished(t, reg)
	p := newPartner(t, false, bigBody)
	c := newTransport(t, reg)

	resp, err := c.Get(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	bh, _ := reg.Find(hostOf(t, p.URL))
	buf := make([]byte, 100)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	if m := bh.Metrics(); m.InFlightCalls != 1 {
		t.Fatalf("while the body is being read: %d in flight, want 1", m.InFlightCalls)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // a second Close gives nothing back
	resp.Body.Read(buf)
	if m := bh.Metrics(); m.InFlightCalls != 0 {
		t.Errorf("after Close: %d in flight, want 0", m.InFlightCalls)
	}
	if got := done.Load(); got != 1 {
		t.Errorf("CallFinished published %d times, want 1", got)
	}
	// The permit is usable again.
	resp, err = c.Get(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestTransportBodyReadToEOFGivesThePermitBackBeforeClose(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	done := finished(t, reg)
	p := newPartner(t, false, bigBody)
	c := newTransport(t, reg)

	resp, err := c.Get(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil || len(b) != len(bigBody) {
		t.Fatalf("read %d bytes, %v; want %d", len(b), err, len(bigBody))
	}
	bh, _ := reg.Find(hostOf(t, p.URL))
	if m := bh.Metrics(); m.InFlightCalls != 0 {
		t.Errorf("after EOF, before Close: %d in flight, want 0", m.InFlightCalls)
	}
	resp.Body.Close()
	resp.Body.Close()
	if got := done.Load(); got != 1 {
		t.Errorf("CallFinished published %d times, want 1", got)
	}
}

func TestTransportFailedRoundTripGivesThePermitBack(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	done := finished(t, reg)
	// A server that hangs up without answering.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	c := newTransport(t, reg)

	for range 3 { // the limit is 1: each call must have given its permit back
		_, err := c.Post(srv.URL, "text/plain", bytes.NewReader([]byte("x")))
		if err == nil || errors.Is(err, bulkhead.ErrBulkheadFull) {
			t.Fatalf("err = %v, want the connection's error", err)
		}
	}
	if got := done.Load(); got != 3 {
		t.Errorf("CallFinished published %d times, want 3", got)
	}
}

func TestTransportBodyThatFailsMidwayGivesThePermitBack(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	// A server that promises more bytes than it sends.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "short")
		http.NewResponseController(w).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	c := newTransport(t, reg)
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		var ne net.Error
		if !errors.As(err, &ne) {
			t.Fatalf("read: err = %v, want a truncated body", err)
		}
	}
	bh, _ := reg.Find(hostOf(t, srv.URL))
	if m := bh.Metrics(); m.InFlightCalls != 0 {
		t.Errorf("after the failed read, before Close: %d in flight, want 0", m.InFlightCalls)
	}
	resp.Body.Close()
}
