package bulkheadhttp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
)

// holdFirst is a handler that counts its runs and holds each one until
// release is closed, whatever its request's context does.
type holdFirst struct {
	runs    atomic.Int64
	arrived chan struct{}
	release chan struct{}
}

func newHoldFirst() *holdFirst {
	return &holdFirst{arrived: make(chan struct{}, 16), release: make(chan struct{})}
}

func (h *holdFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.runs.Add(1)
	h.arrived <- struct{}{}
	<-h.release
	io.WriteString(w, "ok")
}

// postOrder posts to url and returns the status, Retry-After and body.
func postOrder(ctx context.Context, c *http.Client, url string, header http.Header) (int, string, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("order"))
	if err != nil {
		return 0, "", "", err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b), err
}

// An outer middleware that bounds the request with context.WithTimeout
// (here only for requests carrying X-Timeout, so the held one is not
// bounded): the queued POST whose timeout passes is answered 503 with
// Retry-After, not 200 "". Real server on 127.0.0.1.
func TestMiddlewareWithdrawnByAnOuterTimeoutIsAnswered503NotOK(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	ev := events(t, reg)
	h := newHoldFirst()
	mw, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithKey(func(*http.Request) string { return "orders" }))
	if err != nil {
		t.Fatal(err)
	}
	limited := mw(h)
	timeout := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d, err := time.ParseDuration(r.Header.Get("X-Timeout")); err == nil {
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			r = r.WithContext(ctx)
		}
		limited.ServeHTTP(w, r)
	})
	srv := newServer(t, timeout)
	t.Cleanup(func() { close(h.release) })
	c := bareClient(t)

	first := make(chan error, 1)
	go func() {
		_, _, _, err := postOrder(context.Background(), c, srv.URL, nil)
		first <- err
	}()
	<-h.arrived
	status, retry, body, err := postOrder(context.Background(), c, srv.URL, http.Header{"X-Timeout": {"100ms"}})
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusServiceUnavailable || retry != "1" {
		t.Errorf("withdrawn POST answered %d %q (Retry-After %q); want 503 with Retry-After 1", status, body, retry)
	}
	if !strings.Contains(body, `bulkhead "orders"`) || !strings.Contains(body, "withdrawn") {
		t.Errorf("withdrawn POST body %q does not say it was withdrawn from bulkhead orders", body)
	}
	awaitEvent(t, ev, bulkhead.CallCancelled) // it had been queued, and left the queue
	bh, _ := reg.Find("orders")
	if m := bh.Metrics(); m.QueuedCalls != 0 || m.InFlightCalls != 1 {
		t.Errorf("after the withdrawal: %d queued, %d in flight; want 0 and 1", m.QueuedCalls, m.InFlightCalls)
	}
	if got := h.runs.Load(); got != 1 {
		t.Errorf("handler ran %d times, want 1 (the withdrawn request must not reach it)", got)
	}
	h.release <- struct{}{} // lets the held request answer
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// A server whose BaseContext is cancelled while a request is queued: the
// queued request is answered 503 (the connection is still open: cancelling
// the base context closes nothing). The cancellation is the test's, so the
// queued request is known to be in the queue when it happens.
func TestMiddlewareWithdrawnByACancelledBaseContextIsAnswered503(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	ev := events(t, reg)
	h := newHoldFirst()
	mw, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithKey(func(*http.Request) string { return "orders" }))
	if err != nil {
		t.Fatal(err)
	}
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := httptest.NewUnstartedServer(mw(h))
	srv.Config.BaseContext = func(net.Listener) context.Context { return base }
	srv.Start()
	released := false
	release := func() {
		if !released {
			released = true
			close(h.release)
		}
	}
	t.Cleanup(func() {
		release()
		srv.Close()
	})
	c := bareClient(t)

	first := make(chan error, 1)
	go func() {
		_, _, _, err := postOrder(context.Background(), c, srv.URL, nil)
		first <- err
	}()
	<-h.arrived
	type answer struct {
		status      int
		retry, body string
		err         error
	}
	queued := make(chan answer, 1)
	go func() {
		var a answer
		a.status, a.retry, a.body, a.err = postOrder(context.Background(), c, srv.URL, nil)
		queued <- a
	}()
	bh, _ := reg.Find("orders")
	awaitQueued(t, bh, 1)
	cancel() // the server's base context: every request's context ends
	awaitEvent(t, ev, bulkhead.CallCancelled)
	var a answer
	select {
	case a = <-queued:
	case <-time.After(waitTimeout):
		t.Fatal("the queued request was not answered")
	}
	if a.err != nil || a.status != http.StatusServiceUnavailable || a.retry != "1" {
		t.Errorf("queued request after BaseContext was cancelled: %d %q (Retry-After %q), %v; want 503", a.status, a.body, a.retry, a.err)
	}
	release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if got := h.runs.Load(); got != 1 {
		t.Errorf("handler ran %d times, want 1", got)
	}
}

// The same on an httptest.ResponseRecorder, in a synctest bubble: the
// queued request's context.WithTimeout passes on the fake clock, and the
// reject handler receives a *WithdrawnError that matches the context's
// error and bulkhead.ErrCancelled.
func TestMiddlewareWithdrawnRequestGoesToTheRejectHandler(t *testing.T) {
	for _, custom := range []bool{false, true} {
		name := "default"
		if custom {
			name = "WithRejectHandler"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
				opts := []bulkheadhttp.Option{bulkheadhttp.WithKey(func(*http.Request) string { return "orders" })}
				var got error
				if custom {
					opts = append(opts, bulkheadhttp.WithRejectHandler(func(w http.ResponseWriter, r *http.Request, err error) {
						got = err
						http.Error(w, "busy", http.StatusTooManyRequests)
					}))
				}
				mw, err := bulkheadhttp.NewMiddleware(reg, opts...)
				if err != nil {
					t.Fatal(err)
				}
				h := newHoldFirst()
				limited := mw(h)
				go limited.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader("a")))
				<-h.arrived

				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				rec := httptest.NewRecorder()
				start := time.Now()
				limited.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader("b")).WithContext(ctx))
				if waited := time.Since(start); waited != 100*time.Millisecond {
					t.Errorf("the queued request returned after %v, want its 100ms timeout", waited)
				}
				want := http.StatusServiceUnavailable
				if custom {
					want = http.StatusTooManyRequests
				}
				if rec.Code != want {
					t.Errorf("withdrawn request answered %d %q, want %d", rec.Code, rec.Body.String(), want)
				}
				if !custom && rec.Header().Get("Retry-After") != "1" {
					t.Errorf("Retry-After = %q, want 1", rec.Header().Get("Retry-After"))
				}
				if custom {
					var we *bulkheadhttp.WithdrawnError
					if !errors.As(got, &we) || we.Name != "orders" || !errors.Is(got, context.DeadlineExceeded) || !errors.Is(got, bulkhead.ErrCancelled) {
						t.Errorf("reject handler got %v, want a *WithdrawnError for orders matching DeadlineExceeded and ErrCancelled", got)
					}
				}
				if got := h.runs.Load(); got != 1 {
					t.Errorf("handler ran %d times, want 1", got)
				}
				close(h.release)
				synctest.Wait()
			})
		})
	}
}
