package bulkheadhttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Bounds of the waits on real loopback servers: long enough for a loaded CI
// machine, short enough that a hung test fails instead of timing out.
const (
	waitTimeout = 10 * time.Second // for something that must happen
)

// newRegistry returns a registry with the permit-leak check registered.
func newRegistry(t *testing.T, cfg bulkhead.Config, opts ...bulkhead.RegistryOption) *bulkhead.Registry {
	t.Helper()
	reg, err := bulkhead.NewRegistry(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, reg)
	return reg
}

// partner is a loopback HTTP server that counts the requests it receives and
// how many it serves at once, and holds each request until released.
type partner struct {
	*httptest.Server
	received  atomic.Int64 // requests that reached the handler
	inFlight  atomic.Int64
	peak      atomic.Int64
	arrived   chan struct{} // one value per request that reached the handler
	release   chan struct{} // closed: every held request answers
	closeOnce sync.Once
	body      string
}

// newPartner starts a partner whose handler blocks until Release when hold
// is true, and answers body at once otherwise.
func newPartner(t *testing.T, hold bool, body string) *partner {
	t.Helper()
	p := &partner{arrived: make(chan struct{}, 1024), release: make(chan struct{}), body: body}
	if !hold {
		p.Release()
	}
	p.Server = httptest.NewServer(p.handler())
	t.Cleanup(func() {
		p.Release()
		p.Close()
	})
	return p
}

func (p *partner) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.received.Add(1)
		n := p.inFlight.Add(1)
		defer p.inFlight.Add(-1)
		for {
			old := p.peak.Load()
			if n <= old || p.peak.CompareAndSwap(old, n) {
				break
			}
		}
		io.Copy(io.Discard, r.Body)
		p.arrived <- struct{}{}
		select {
		case <-p.release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, p.body)
	})
}

// Release lets every held and future request answer.
func (p *partner) Release() { p.closeOnce.Do(func() { close(p.release) }) }

// awaitArrivals waits until n more requests have reached the handler.
func (p *partner) awaitArrivals(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(waitTimeout)
	for range n {
		select {
		case <-p.arrived:
		case <-timeout:
			t.Fatalf("partner %s: timed out waiting for a request to arrive (received %d)", p.URL, p.received.Load())
		}
	}
}

// newClient returns an http.Client over tr whose idle connections are closed
// at the end of the test (goleak).
func newClient(t *testing.T, tr http.RoundTripper) *http.Client {
	t.Helper()
	c := &http.Client{Transport: tr}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// result of one request sent in the background.
type result struct {
	body string
	err  error
}

// goGet sends GET url with c in a new goroutine; the result arrives on the
// returned channel.
func goGet(ctx context.Context, c *http.Client, url string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			ch <- result{err: err}
			return
		}
		resp, err := c.Do(req)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		ch <- result{body: string(b), err: err}
	}()
	return ch
}

// await waits for a result, failing the test after waitTimeout.
func await(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitTimeout):
		t.Fatal("timed out waiting for a request to finish")
		return result{}
	}
}

// awaitEvent waits for the first event of type et on ch.
func awaitEvent(t *testing.T, ch <-chan bulkhead.Event, et bulkhead.EventType) bulkhead.Event {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		select {
		case e := <-ch:
			if e.Type == et {
				return e
			}
		case <-timeout:
			t.Fatalf("timed out waiting for a %v event", et)
		}
	}
}

// events subscribes to every event of reg for the duration of the test.
func events(t *testing.T, reg *bulkhead.Registry) <-chan bulkhead.Event {
	t.Helper()
	ch := make(chan bulkhead.Event, 4096)
	remove := reg.OnEvent(func(e bulkhead.Event) {
		select {
		case ch <- e:
		default:
		}
	})
	t.Cleanup(remove)
	return ch
}

// awaitQueued waits until bh has n queued calls. A queued call publishes no
// event, so the queue is polled, with a bound.
func awaitQueued(t *testing.T, bh *bulkhead.Semaphore, n int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for bh.Metrics().QueuedCalls != n {
		if time.Now().After(deadline) {
			t.Fatalf("bulkhead %s: %d calls queued, want %d", bh.Name(), bh.Metrics().QueuedCalls, n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// finished counts the CallFinished events of reg for the duration of the test.
func finished(t *testing.T, reg *bulkhead.Registry) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	t.Cleanup(reg.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallFinished {
			n.Add(1)
		}
	}))
	return &n
}

// newServer starts a loopback server closed at the end of the test.
func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
