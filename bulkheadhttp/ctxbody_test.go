package bulkheadhttp_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// stallingPartner starts a loopback server that sends the headers of its
// answer at once and then stalls until the request's context ends or the
// test ends: the body never arrives.
func stallingPartner(t *testing.T) string {
	t.Helper()
	stop := make(chan struct{})
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "ISA")
		http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop) }) // runs before srv.Close (LIFO)
	return srv.URL
}

// waitUntil polls cond every 100 µs until it holds or waitTimeout has
// passed, and reports whether it held.
func waitUntil(cond func() bool) bool {
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
	return true
}

// awaitInFlight waits, with a bound, until bh has n calls in flight.
func awaitInFlight(t *testing.T, bh *bulkhead.Semaphore, n int) {
	t.Helper()
	if !waitUntil(func() bool { return bh.Metrics().InFlightCalls == n }) {
		t.Fatalf("bulkhead %s: %d calls in flight, want %d", bh.Name(), bh.Metrics().InFlightCalls, n)
	}
}

// The partner sent the headers and stalls; the caller cancels the
// request's context and never touches the body: the permit comes back.
func TestTransportContextEndingAfterTheHeadersFreesThePermitOfAnUntouchedBody(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	ev := events(t, reg)
	url := stallingPartner(t)
	c := newTransport(t, reg)

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	bh, _ := reg.Find(hostOf(t, url))
	if m := bh.Metrics(); m.InFlightCalls != 1 {
		t.Fatalf("with the headers in and the body pending: %d in flight, want 1", m.InFlightCalls)
	}
	cancel() // the body is not touched
	awaitEvent(t, ev, bulkhead.CallFinished)
	awaitInFlight(t, bh, 0)
	// The freed permit is usable; then the old body closes without a
	// second release (which would panic in the Semaphore).
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	req2, _ := http.NewRequestWithContext(ctx2, http.MethodGet, url, nil)
	resp2, err := c.Do(req2)
	if err != nil {
		t.Fatalf("a request after the permit came back: %v", err)
	}
	resp.Body.Close()
	if m := bh.Metrics(); m.InFlightCalls != 1 {
		t.Errorf("closing the cancelled body changed the count: %d in flight, want 1 (the second request's)", m.InFlightCalls)
	}
	resp2.Body.Close()
}

// Close, Read and the end of the context race on every call (and on every
// fourth call the context ends alone, the body closed only afterwards):
// exactly one CallFinished each, the permit always back (a second release
// panics in the Semaphore; one missing fails the wait, the count and the
// registry's leak check).
func TestStressTransportBodyCloseRacingContextEndReleasesOnce(t *testing.T) {
	const calls = 300
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: waitTimeout, MaxQueuedCalls: bulkhead.Unbounded})
	done := finished(t, reg)
	url := stallingPartner(t)
	c := newTransport(t, reg)
	bh, _ := reg.Get(hostOf(t, url))

	for i := range calls {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if i%4 == 3 {
			// The context alone: the body is closed only after the
			// permit came back.
			cancel()
			awaitInFlight(t, bh, 0)
			resp.Body.Close()
			continue
		}
		var wg sync.WaitGroup
		wg.Go(cancel)
		wg.Go(func() { resp.Body.Close() })
		if i%4 == 0 {
			wg.Go(func() { resp.Body.Read(make([]byte, 8)) })
		}
		wg.Wait()
		// The AfterFunc may still be finishing when Close lost: wait for
		// the permit, bounded.
		awaitInFlight(t, bh, 0)
	}
	// A Semaphore gives the permit back before it publishes CallFinished,
	// so the last call's event may still be on its way: wait for it,
	// bounded (a second one for any call would show as more than calls).
	waitUntil(func() bool { return done.Load() >= calls })
	if got := done.Load(); got != calls {
		t.Errorf("CallFinished published %d times for %d calls", got, calls)
	}
}

// A 101 Switching Protocols response: the caller owns the connection and
// the request's context no longer ends it, so ending the context leaves
// the permit with the upgraded connection until it is closed.
func TestTransportUpgradedConnectionKeepsItsPermitPastTheContext(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		brw.Flush()
		io.Copy(conn, brw) // echo until the client closes
	}))
	c := newTransport(t, reg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %s, want 101", resp.Status)
	}
	rw, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		t.Fatalf("the 101 body %T is not writable", resp.Body)
	}
	cancel()
	// The connection still works after the context ended ...
	if _, err := io.WriteString(rw, "ping"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(rw, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo after cancel: %q, %v", got, err)
	}
	// ... and holds its permit until it is closed.
	bh, _ := reg.Find(hostOf(t, srv.URL))
	if m := bh.Metrics(); m.InFlightCalls != 1 {
		t.Errorf("an open upgraded connection after its context ended: %d in flight, want 1", m.InFlightCalls)
	}
	rw.Close()
	if m := bh.Metrics(); m.InFlightCalls != 0 {
		t.Errorf("after Close: %d in flight, want 0", m.InFlightCalls)
	}
}
