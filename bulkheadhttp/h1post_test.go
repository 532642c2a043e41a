package bulkheadhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
)

// net/http notices that an HTTP/1.x client went away only once the request
// body has been read: a queued POST whose client leaves stays queued until
// its wait ends, as the middleware's documentation says. This test pins
// that behaviour of net/http; if it fails, a Go release changed it and the
// documentation of NewMiddleware must follow.
func TestMiddlewareQueuedHTTP1PostStaysQueuedUntilItsWaitEnds(t *testing.T) {
	const wait = 300 * time.Millisecond
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: wait, MaxQueuedCalls: bulkhead.Unbounded})
	ev := events(t, reg)
	p := newHandlerPartner(true, "ok")
	mw, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithKey(func(*http.Request) string { return "acme" }))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mw(p.handler()))
	t.Cleanup(func() {
		p.Release()
		srv.Close()
	})
	c := bareClient(t)
	first := tenantGet(context.Background(), t, c, srv.URL, "")
	p.awaitArrivals(t, 1)

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("ISA*00*"))
	queued := make(chan error, 1)
	go func() {
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		queued <- err
	}()
	bh, _ := reg.Find("acme")
	awaitQueued(t, bh, 1)
	cancel()
	<-queued
	timeout := time.After(waitTimeout)
	for ended := false; !ended; {
		select {
		case e := <-ev:
			switch e.Type {
			case bulkhead.CallCancelled:
				t.Error("the queued POST was withdrawn: net/http now notices the client going away (update the documentation)")
				ended = true
			case bulkhead.CallRejected:
				if e.Reason != bulkhead.WaitTimeout {
					t.Errorf("the queued POST was rejected with %v, want a wait timeout", e.Reason)
				}
				ended = true
			}
		case <-timeout:
			t.Fatal("the queued POST neither timed out nor was withdrawn")
		}
	}
	p.Release()
	if r := await(t, first); r.err != nil {
		t.Fatal(r.err)
	}
}
