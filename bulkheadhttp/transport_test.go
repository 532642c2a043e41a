package bulkheadhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
)

func newTransport(t *testing.T, reg *bulkhead.Registry, opts ...bulkheadhttp.Option) *http.Client {
	t.Helper()
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	tr, err := bulkheadhttp.NewTransport(base, reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return newClient(t, tr)
}

func hostOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func TestTransportNeverSendsMoreThanTheLimitAtOnce(t *testing.T) {
	const limit, calls = 3, 40
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: limit, MaxWaitDuration: waitTimeout, MaxQueuedCalls: bulkhead.Unbounded})
	p := newPartner(t, true, "ok")
	c := newTransport(t, reg)

	results := make([]<-chan result, calls)
	for i := range results {
		results[i] = goGet(context.Background(), c, p.URL)
	}
	// The first limit requests reach the server; the others wait in the
	// bulkhead's queue, not on the wire.
	p.awaitArrivals(t, limit)
	bh, _ := reg.Find(hostOf(t, p.URL))
	if m := bh.Metrics(); m.InFlightCalls != limit {
		t.Errorf("in flight = %d, want %d", m.InFlightCalls, limit)
	}
	p.Release()
	for _, ch := range results {
		if r := await(t, ch); r.err != nil || r.body != "ok" {
			t.Errorf("request: body %q, err %v; want ok", r.body, r.err)
		}
	}
	if got := p.peak.Load(); got > limit {
		t.Errorf("the server saw %d requests at once; the limit is %d", got, limit)
	}
	if got := p.received.Load(); got != calls {
		t.Errorf("the server received %d requests, want %d", got, calls)
	}
}

func TestTransportRejectedRequestIsNotSentAndNamesThePartner(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1}) // no wait
	p := newPartner(t, true, "ok")
	c := newTransport(t, reg, bulkheadhttp.WithKey(func(*http.Request) string { return "walmart" }))

	first := goGet(context.Background(), c, p.URL)
	p.awaitArrivals(t, 1)
	_, err := c.Post(p.URL, "application/edi-x12", strings.NewReader("ISA*00*"))
	if !errors.Is(err, bulkhead.ErrBulkheadFull) {
		t.Fatalf("second request: err = %v, want one matching ErrBulkheadFull", err)
	}
	var full *bulkhead.FullError
	if !errors.As(err, &full) || full.Name != "walmart" || full.Reason != bulkhead.NoWait {
		t.Errorf("second request: err = %v, want a *FullError for walmart (no wait)", err)
	}
	if want := (&bulkhead.FullError{Name: "walmart", Reason: bulkhead.NoWait}).Error(); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the partner", err)
	}
	p.Release()
	if r := await(t, first); r.err != nil {
		t.Fatal(r.err)
	}
	if got := p.received.Load(); got != 1 {
		t.Errorf("the server received %d requests, want 1: the rejected one must not be sent", got)
	}
}

func TestTransportHungPartnerHoldsOnlyItsOwnPermits(t *testing.T) {
	const limit = 2
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: limit, MaxWaitDuration: waitTimeout, MaxQueuedCalls: bulkhead.Unbounded})
	hung := newPartner(t, true, "late")
	healthy := newPartner(t, false, "ok")
	c := newTransport(t, reg)

	var held []<-chan result
	for range limit {
		held = append(held, goGet(context.Background(), c, hung.URL))
	}
	hung.awaitArrivals(t, limit)
	held = append(held, goGet(context.Background(), c, hung.URL))
	hungBH, _ := reg.Find(hostOf(t, hung.URL))
	awaitQueued(t, hungBH, 1)
	// The other partner's bulkhead is untouched: 20 requests at once (10
	// times its permits) all get through while the hung partner holds its
	// permits and a request waits for them.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			resp, err := c.Get(healthy.URL)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
				errs <- errors.New("healthy partner answered " + string(b))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("request to the healthy partner failed while another partner hung: %v", err)
	}
	hung.Release()
	for _, ch := range held {
		if r := await(t, ch); r.err != nil || r.body != "late" {
			t.Errorf("held request: %q, %v", r.body, r.err)
		}
	}
}

func TestTransportQueuedRequestWithdrawnWhenItsContextEnds(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	ev := events(t, reg)
	p := newPartner(t, true, "ok")
	c := newTransport(t, reg)

	first := goGet(context.Background(), c, p.URL)
	p.awaitArrivals(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	queued := goGet(ctx, c, p.URL)
	bh, _ := reg.Find(hostOf(t, p.URL))
	awaitQueued(t, bh, 1)
	cancel()
	awaitEvent(t, ev, bulkhead.CallCancelled)
	if r := await(t, queued); !errors.Is(r.err, context.Canceled) {
		t.Errorf("withdrawn request: err = %v, want context.Canceled", r.err)
	}
	if m := bh.Metrics(); m.QueuedCalls != 0 || m.InFlightCalls != 1 {
		t.Errorf("after the withdrawal: %d queued, %d in flight; want 0 and 1", m.QueuedCalls, m.InFlightCalls)
	}
	p.Release()
	if r := await(t, first); r.err != nil {
		t.Fatal(r.err)
	}
	if got := p.received.Load(); got != 1 {
		t.Errorf("the server received %d requests, want 1", got)
	}
}
