package bulkheadhttp_test

// The tests in this file try the promises of the Transport's and the
// middleware's doc comments the way a hostile caller would: one permit and
// no queue with a redirect (the second hop needs the permit the first one
// holds until its body is closed), a context that ends between Go's grant
// and the send, a context that ended before the call, and a handler that
// re-enters its own bulkhead.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
)

// onePermit rejects at once when its only permit is held.
var onePermit = bulkhead.Config{MaxConcurrentCalls: 1}

// redirecting serves "/" with a redirect to "/target", which answers "ok".
func redirecting(t *testing.T) (srv *httptest.Server, hits *atomic.Int64) {
	hits = &atomic.Int64{}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "/target", http.StatusFound)
	})
	mux.HandleFunc("/target", func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		io.WriteString(w, "ok")
	})
	return newServer(t, mux), hits
}

// Promise: the permit is held "until the first of the response body being
// closed, read to its end ..."; each request takes its own. http.Client
// follows a redirect with a second request after closing the first
// response's body, so on one permit without a queue the second hop must
// find the permit free, through RoundTrip and through Go (whose granted
// permit serves the first hop only).
func TestHostileARedirectOnOnePermitWithoutAQueueIsFollowed(t *testing.T) {
	for _, via := range []string{"Client.Do", "Transport.Go"} {
		t.Run(via, func(t *testing.T) {
			reg := newRegistry(t, onePermit)
			calls := finished(t, reg)
			srv, hits := redirecting(t)
			tr, c := newAsync(t, reg)
			var r result
			if via == "Client.Do" {
				r = await(t, goGet(context.Background(), c, srv.URL))
			} else {
				r = await(t, goSend(tr, c, get(t, context.Background(), srv.URL)))
			}
			if r.err != nil || r.body != "ok" {
				t.Fatalf("redirected request: %q, %v", r.body, r.err)
			}
			if hits.Load() != 2 || calls.Load() != 2 {
				t.Fatalf("%d hits, %d CallFinished; want 2 and 2", hits.Load(), calls.Load())
			}
		})
	}
}

// Promise (Go): once granted, "the permit is then held as for RoundTrip",
// and a request whose context has ended is not sent. Here the context ends
// after Go's grant, on the goroutine Go started, before RoundTrip takes the
// permit (the key function runs there and cancels it): done must get the
// context's error, the partner must see nothing, and the permit must come
// back (a request after it finds it free). The grant comes from the queue,
// when the test gives back the permit it held, so the cancel is armed
// before the send goroutine exists.
func TestHostileGoContextEndingBetweenTheGrantAndTheSend(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: waitTimeout, MaxQueuedCalls: 1})
	p := newPartner(t, false, "ok")
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	var cancelOnLookup atomic.Pointer[context.CancelFunc]
	tr, err := bulkheadhttp.NewTransport(base, reg, bulkheadhttp.WithKey(func(*http.Request) string {
		if c := cancelOnLookup.Swap(nil); c != nil {
			(*c)()
		}
		return "partner"
	}))
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, tr)
	held, err := reg.AcquirePermission(context.Background(), "partner", bulkhead.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan error, 1)
	tr.Go(c, get(t, ctx, p.URL), func(resp *http.Response, err error) {
		if resp != nil {
			resp.Body.Close()
		}
		got <- err
	})
	bh, _ := reg.Find("partner")
	if q := bh.Metrics().QueuedCalls; q != 1 {
		t.Fatalf("%d queued, want Go's request queued", q)
	}
	cancelOnLookup.Store(&cancel) // RoundTrip's key lookup, after the grant, cancels
	held.ReleasePermission()      // grants Go's request
	r := await(t, errResult(got))
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("done got %v, want context.Canceled", r.err)
	}
	if n := p.received.Load(); n != 0 {
		t.Fatalf("the partner received %d requests whose context ended before the send", n)
	}
	if m := bh.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
		t.Fatalf("after done: %+v", m)
	}
	if r := await(t, goSend(tr, c, get(t, context.Background(), p.URL))); r.err != nil || r.body != "ok" {
		t.Fatalf("next request: %q, %v (the permit did not come back)", r.body, r.err)
	}
}

// errResult turns a channel of errors into one of results, for await.
func errResult(ch <-chan error) <-chan result {
	out := make(chan result, 1)
	go func() { out <- result{err: <-ch} }()
	return out
}

// Promise (Go): a request whose context has already ended gets done(nil,
// ctx.Err()) at once, on the caller's goroutine, and its body is closed; it
// asks no bulkhead, so a full one without a queue must not turn it into a
// FullError.
func TestHostileGoWithAnEndedContextOnAFullBulkheadAsksNothing(t *testing.T) {
	reg := newRegistry(t, onePermit)
	p := newPartner(t, true, "ok")
	tr, c := newAsync(t, reg)
	first := goSend(tr, c, get(t, context.Background(), p.URL))
	p.awaitArrivals(t, 1)
	ev := events(t, reg)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := get(t, ctx, p.URL)
	body := &closeCounter{Reader: &emptyReader{}}
	req.Body = body
	var called atomic.Int32
	var gotErr error
	tr.Go(c, req, func(resp *http.Response, err error) {
		called.Add(1)
		gotErr = err
	})
	if called.Load() != 1 {
		t.Fatal("done was not called at once on the caller's goroutine")
	}
	if !errors.Is(gotErr, context.Canceled) {
		t.Fatalf("done got %v, want context.Canceled", gotErr)
	}
	if body.closed.Load() != 1 {
		t.Fatalf("request body closed %d times, want 1", body.closed.Load())
	}
	select {
	case e := <-ev:
		t.Fatalf("event %v for a request that asked for no permit", e.Type)
	default:
	}
	p.Release()
	if r := await(t, first); r.err != nil {
		t.Fatal(r.err)
	}
}

type emptyReader struct{}

func (*emptyReader) Read([]byte) (int, error) { return 0, io.EOF }

type closeCounter struct {
	io.Reader
	closed atomic.Int32
}

func (c *closeCounter) Close() error { c.closed.Add(1); return nil }

// Promise (middleware, Withdrawn): a request whose context ended before a
// permit was granted, "or had ended before it got there", holds no permit,
// its handler does not run, and it is answered the rejection with a
// *WithdrawnError, never 200, even on a free bulkhead.
func TestHostileMiddlewareRequestWhoseContextEndedBeforeItArrived(t *testing.T) {
	reg := newRegistry(t, onePermit)
	ev := events(t, reg)
	var rejected error
	mw, err := bulkheadhttp.NewMiddleware(reg,
		bulkheadhttp.WithKey(func(*http.Request) string { return "acme" }),
		bulkheadhttp.WithRejectHandler(func(w http.ResponseWriter, _ *http.Request, err error) {
			rejected = err
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
	var wd *bulkheadhttp.WithdrawnError
	if ran || w.Code != http.StatusServiceUnavailable || !errors.As(rejected, &wd) || !errors.Is(rejected, context.Canceled) {
		t.Fatalf("handler ran=%v, status %d, rejection %v; want no handler, 503, a WithdrawnError", ran, w.Code, rejected)
	}
	select {
	case e := <-ev:
		t.Fatalf("event %v for a request withdrawn before it asked", e.Type)
	default:
	}
}

// Promise (middleware): the permit is taken before the handler runs and
// given back when it returns, also by a panic. A handler that serves a
// nested request through the same middleware and key (an internal
// forward) asks for one more permit each time: with two permits and no
// queue, the second level is granted and the third rejected at once (503,
// never a deadlock, its handler not run), the outer handlers go on, and
// both permits come back with FinishCall.
func TestHostileMiddlewareHandlerReenteringItsOwnBulkhead(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2})
	calls := finished(t, reg)
	mw, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithKey(func(*http.Request) string { return "acme" }))
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler
	var codes []int
	depth, deepest := 0, 0
	h = mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		depth++
		defer func() { depth-- }()
		deepest = max(deepest, depth)
		if depth < 3 {
			inner := httptest.NewRecorder()
			h.ServeHTTP(inner, r)
			codes = append(codes, inner.Code)
		}
		io.WriteString(w, "served")
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	// depth 1 holds a permit, depth 2 holds the second, depth 3 is rejected.
	if w.Code != http.StatusOK || deepest != 2 {
		t.Fatalf("outer: %d, deepest handler %d; want 200 and 2", w.Code, deepest)
	}
	if len(codes) != 2 || codes[0] != http.StatusServiceUnavailable || codes[1] != http.StatusOK {
		t.Fatalf("nested answers %v, want [503 200] (innermost first)", codes)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d CallFinished, want 2", calls.Load())
	}
}

// backToBack is how many requests the back-to-back test sends.
const backToBack = 300

// Promise: the Transport gives the permit back when the body is read to
// its end or closed (before Read or Close returns, on the caller's
// goroutine), and the middleware when the handler returns (before net/http
// finishes the response). So a client that sends its requests one at a
// time, each as soon as the previous one was read or closed, is never
// refused by a bulkhead of one permit without a queue, on either side.
// (An abandoned body whose context ends is different: its permit comes
// back on context.AfterFunc's goroutine, a moment after the cancel; see
// the Transport's doc.)
func TestHostileBackToBackRequestsOnOnePermitAreNeverRefused(t *testing.T) {
	reg := newRegistry(t, onePermit)
	mw, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithKey(func(*http.Request) string { return "server side" }))
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })))
	c := newTransport(t, reg) // client side: the bulkhead of the server's host
	for i := range backToBack {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if i%2 == 0 {
			b, err := io.ReadAll(resp.Body) // EOF gives the permit back
			if err != nil || string(b) != "ok" || resp.StatusCode != http.StatusOK {
				t.Fatalf("request %d: %d %q %v", i, resp.StatusCode, b, err)
			}
		} else if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %s", i, resp.Status)
		}
		resp.Body.Close() // closed early on odd requests
	}
}

// Promise (RoundTrip): it "fails without sending req, and closes its body,
// if ... the bulkhead rejects the request, or if the request's context ends
// first"; Go likewise closes the body of a request it does not send. Tried
// on RoundTrip itself (http.Client would close the body for it) and on Go,
// with the only permit held and no queue, and with a context that ends
// while the request waits in a queue.
func TestHostileARequestThatIsNotSentHasItsBodyClosedOnce(t *testing.T) {
	for _, queue := range []bool{false, true} {
		for _, via := range []string{"RoundTrip", "Go"} {
			name := via + map[bool]string{false: "/rejected", true: "/withdrawn while queued"}[queue]
			t.Run(name, func(t *testing.T) {
				cfg := onePermit
				if queue {
					cfg = bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: waitTimeout, MaxQueuedCalls: 1}
				}
				reg := newRegistry(t, cfg)
				p := newPartner(t, false, "ok")
				tr, c := newAsync(t, reg)
				held, err := reg.AcquirePermission(context.Background(), hostOf(t, p.URL), bulkhead.CallOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer held.FinishCall()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, nil)
				if err != nil {
					t.Fatal(err)
				}
				body := &closeCounter{Reader: &emptyReader{}}
				req.Body = body
				got := make(chan error, 1)
				if via == "RoundTrip" {
					go func() {
						resp, err := tr.RoundTrip(req)
						if resp != nil {
							resp.Body.Close()
						}
						got <- err
					}()
				} else {
					tr.Go(c, req, func(resp *http.Response, err error) {
						if resp != nil {
							resp.Body.Close()
						}
						got <- err
					})
				}
				want := bulkhead.ErrBulkheadFull
				if queue {
					bh, _ := reg.Find(hostOf(t, p.URL))
					awaitQueued(t, bh, 1)
					cancel()
					want = context.Canceled
				}
				r := await(t, errResult(got))
				if !errors.Is(r.err, want) {
					t.Fatalf("err = %v, want %v", r.err, want)
				}
				if n := body.closed.Load(); n != 1 {
					t.Fatalf("request body closed %d times, want once", n)
				}
				if n := p.received.Load(); n != 0 {
					t.Fatalf("the partner received %d requests", n)
				}
			})
		}
	}
}
