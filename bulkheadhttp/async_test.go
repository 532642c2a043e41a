package bulkheadhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
)

func newAsync(t *testing.T, reg *bulkhead.Registry) (*bulkheadhttp.Transport, *http.Client) {
	t.Helper()
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	tr, err := bulkheadhttp.NewTransport(base, reg)
	if err != nil {
		t.Fatal(err)
	}
	return tr, newClient(t, tr)
}

// goSend sends req with tr.Go and returns the outcome on a channel, the
// body read to its end.
func goSend(tr *bulkheadhttp.Transport, c *http.Client, req *http.Request) <-chan result {
	ch := make(chan result, 1)
	tr.Go(c, req, func(resp *http.Response, err error) {
		if err != nil {
			ch <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		ch <- result{body: string(b), err: err}
	})
	return ch
}

func get(t *testing.T, ctx context.Context, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestGoQueuedRequestsCostNoGoroutine(t *testing.T) {
	const queued = 200
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: waitTimeout, MaxQueuedCalls: queued})
	p := newPartner(t, true, "ok")
	tr, c := newAsync(t, reg)

	first := goSend(tr, c, get(t, context.Background(), p.URL))
	p.awaitArrivals(t, 1)
	before := runtime.NumGoroutine()
	var results []<-chan result
	for range queued {
		results = append(results, goSend(tr, c, get(t, context.Background(), p.URL)))
	}
	bh, _ := reg.Find(hostOf(t, p.URL))
	if m := bh.Metrics(); m.QueuedCalls != queued {
		t.Fatalf("%d queued, want %d", m.QueuedCalls, queued)
	}
	// A goroutine per queued request would add 200; the process's own
	// background goroutines may come and go by a few.
	if added := runtime.NumGoroutine() - before; added > 5 {
		t.Errorf("%d queued requests added %d goroutines; want none", queued, added)
	}
	p.Release()
	for _, ch := range append(results, first) {
		if r := await(t, ch); r.err != nil || r.body != "ok" {
			t.Errorf("request: %q, %v", r.body, r.err)
		}
	}
	if got := p.peak.Load(); got != 1 {
		t.Errorf("the server saw %d requests at once; the limit is 1", got)
	}
}

func TestGoRejectedOrWithdrawnRequestIsNotSent(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: waitTimeout, MaxQueuedCalls: 1})
	p := newPartner(t, true, "ok")
	tr, c := newAsync(t, reg)
	first := goSend(tr, c, get(t, context.Background(), p.URL))
	p.awaitArrivals(t, 1)

	ctx, cancel := context.WithCancel(context.Background())
	withdrawn := goSend(tr, c, get(t, ctx, p.URL)) // queued
	full := goSend(tr, c, get(t, context.Background(), p.URL))
	if r := await(t, full); !errors.Is(r.err, bulkhead.ErrBulkheadFull) {
		t.Errorf("request beyond the queue: %v, want ErrBulkheadFull", r.err)
	}
	cancel()
	if r := await(t, withdrawn); !errors.Is(r.err, context.Canceled) {
		t.Errorf("withdrawn request: %v, want context.Canceled", r.err)
	}
	bh, _ := reg.Find(hostOf(t, p.URL))
	if m := bh.Metrics(); m.QueuedCalls != 0 || m.InFlightCalls != 1 {
		t.Errorf("%d queued, %d in flight; want 0 and 1", m.QueuedCalls, m.InFlightCalls)
	}
	p.Release()
	if r := await(t, first); r.err != nil {
		t.Fatal(r.err)
	}
	if got := p.received.Load(); got != 1 {
		t.Errorf("the server received %d requests, want 1", got)
	}
}

func TestGoGivesBackAPermitThatClientDoNeverUsed(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	done := finished(t, reg)
	base := http.DefaultTransport.(*http.Transport).Clone()
	tr, err := bulkheadhttp.NewTransport(base, reg, bulkheadhttp.WithKey(func(r *http.Request) string { return r.Header.Get("AS2-To") }))
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, tr)
	// A request without a URL fails in client.Do before it reaches the
	// Transport, after Go was granted its permit.
	req := get(t, context.Background(), "http://127.0.0.1:1/")
	req.Header.Set("AS2-To", "walmart")
	req.URL = nil
	for range 3 { // the limit is 1: each must have given its permit back
		if r := await(t, goSend(tr, c, req)); r.err == nil || errors.Is(r.err, bulkhead.ErrBulkheadFull) {
			t.Fatalf("err = %v, want client.Do's error", r.err)
		}
	}
	if got := done.Load(); got != 0 {
		t.Errorf("%d CallFinished events for calls that never ran, want 0", got)
	}
}

func TestRoundTripWithoutURLFailsWithKeyError(t *testing.T) {
	reg := newRegistry(t, bulkhead.DefaultConfig())
	tr, _ := newAsync(t, reg)
	req := get(t, context.Background(), "http://127.0.0.1:1/")
	req.URL = nil
	var ke *bulkheadhttp.KeyError
	if _, err := tr.RoundTrip(req); !errors.As(err, &ke) {
		t.Errorf("err = %v, want a *KeyError", err)
	}
}

func TestGoRefusesAClientWithAnotherTransport(t *testing.T) {
	reg := newRegistry(t, bulkhead.DefaultConfig())
	tr, _ := newAsync(t, reg)
	r := await(t, goSend(tr, http.DefaultClient, get(t, context.Background(), "http://127.0.0.1:1/")))
	if r.err == nil || !strings.Contains(r.err.Error(), "the client's Transport is not this Transport") {
		t.Errorf("err = %v", r.err)
	}
	if len(reg.All()) != 0 {
		t.Error("a bulkhead was created for a request that was refused")
	}
}
