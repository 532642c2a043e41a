package bulkheadhttp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
)

// The overhead benchmarks compare a peer pair in one binary: run them with
// bench/scripts/interleave.sh so that the machine's drift falls on both
// (docs/benchmarks.md, section net/http, gives the command).

var okBody = []byte("997 accepted\n")

func trivial(w http.ResponseWriter, _ *http.Request) { w.Write(okBody) }

// BenchmarkTransport: one GET at a time to a loopback server, the body read
// to its end and closed, with a bare http.Transport and with the same
// transport under bulkheadhttp.Transport (a free permit each time).
func BenchmarkTransport(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(trivial))
	defer srv.Close()
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"bare", "bulkhead"} {
		b.Run(name, func(b *testing.B) {
			base := http.DefaultTransport.(*http.Transport).Clone()
			defer base.CloseIdleConnections()
			var rt http.RoundTripper = base
			if name == "bulkhead" {
				if rt, err = bulkheadhttp.NewTransport(base, reg); err != nil {
					b.Fatal(err)
				}
			}
			c := &http.Client{Transport: rt}
			get := func() {
				resp, err := c.Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			get() // the connection
			b.ReportAllocs()
			for b.Loop() {
				get()
			}
		})
	}
}

// BenchmarkMiddleware: the trivial handler, bare and behind the middleware
// (a free permit each time), through a loopback httptest server ("server")
// and called directly with an httptest.ResponseRecorder ("recorder", the
// middleware's own cost without the network).
func BenchmarkMiddleware(b *testing.B) {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		b.Fatal(err)
	}
	mw, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithKey(func(*http.Request) string { return "orders" }))
	if err != nil {
		b.Fatal(err)
	}
	handlers := []struct {
		name string
		h    http.Handler
	}{{"bare", http.HandlerFunc(trivial)}, {"bulkhead", mw(http.HandlerFunc(trivial))}}
	b.Run("server", func(b *testing.B) {
		for _, h := range handlers {
			b.Run(h.name, func(b *testing.B) {
				srv := httptest.NewServer(h.h)
				defer srv.Close()
				tr := http.DefaultTransport.(*http.Transport).Clone()
				defer tr.CloseIdleConnections()
				c := &http.Client{Transport: tr}
				b.ReportAllocs()
				for b.Loop() {
					resp, err := c.Get(srv.URL)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
	})
	b.Run("recorder", func(b *testing.B) {
		for _, h := range handlers {
			b.Run(h.name, func(b *testing.B) {
				req := httptest.NewRequest(http.MethodGet, "/", nil)
				b.ReportAllocs()
				for b.Loop() {
					h.h.ServeHTTP(httptest.NewRecorder(), req)
				}
			})
		}
	})
}

// BenchmarkQueuedServerRequests opens 10,000 connections to a loopback
// server, each sending one GET, and counts the goroutines and the live heap
// the server holds for them: "handler" runs them all in a handler that
// blocks (net/http's own cost), "queued" puts the middleware in front with
// one permit, held, so that 9,999 requests wait in its queue. Reported per
// request. The clients are raw connections in a child process (this test
// binary running TestHelperDialer), so that they cost this process neither
// goroutines nor descriptors. Run it with -benchtime 1x: one iteration is
// the whole experiment.
func BenchmarkQueuedServerRequests(b *testing.B) {
	const conns = 10_000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < conns+1000 {
		b.Skipf("needs %d descriptors, the limit is %d (%v)", conns+1000, lim.Cur, err)
	}
	for _, name := range []string{"handler", "queued"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				before, after := queuedServerCost(b, name == "queued", conns)
				report(b, before, after, conns)
			}
		})
	}
}

func queuedServerCost(b *testing.B, queued bool, conns int) (before, after cost) {
	release := make(chan struct{})
	arrived := make(chan struct{}, conns)
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: conns})
	if err != nil {
		b.Fatal(err)
	}
	if queued {
		mw, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithKey(func(*http.Request) string { return "orders" }))
		if err != nil {
			b.Fatal(err)
		}
		h = mw(h)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer close(release)
	addr := srv.Listener.Addr().String()

	before = liveCost()
	stop := startDialer(b, addr, conns)
	defer stop()
	// Every request is either in the handler or in the queue.
	deadline := time.After(time.Minute)
	want := conns
	if queued {
		want = 1
	}
	for range want {
		select {
		case <-arrived:
		case <-deadline:
			b.Fatal("requests did not reach the handler")
		}
	}
	if queued {
		bh, _ := reg.Find("orders")
		for bh.Metrics().QueuedCalls != conns-1 {
			select {
			case <-deadline:
				b.Fatalf("%d queued, want %d", bh.Metrics().QueuedCalls, conns-1)
			case <-time.After(time.Millisecond):
			}
		}
	}
	return before, liveCost()
}

// startDialer starts a child process that opens n connections to addr and
// sends a GET on each; stop closes them all and waits for the child.
func startDialer(b *testing.B, addr string, n int) (stop func()) {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperDialer$")
	cmd.Env = append(os.Environ(), "BULKHEADHTTP_DIALER="+addr, "BULKHEADHTTP_DIALS="+strconv.Itoa(n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "dialed\n" {
		stdin.Close()
		cmd.Wait()
		b.Fatalf("dialer: %q, %v", line, err)
	}
	return func() {
		stdin.Close() // the child closes its connections and exits
		cmd.Wait()
	}
}

// TestHelperDialer is the child process of BenchmarkQueuedServerRequests;
// without its environment variables it does nothing.
func TestHelperDialer(t *testing.T) {
	addr := os.Getenv("BULKHEADHTTP_DIALER")
	if addr == "" {
		return
	}
	n, _ := strconv.Atoi(os.Getenv("BULKHEADHTTP_DIALS"))
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: bench\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	fmt.Println("dialed")
	io.Copy(io.Discard, os.Stdin) // until the parent closes it
	for _, c := range conns {
		c.Close()
	}
}

// cost is what a process holds: goroutines, live heap and goroutine stacks.
type cost struct {
	goroutines     int
	heap, stackMem uint64
}

// liveCost returns what the process holds after a full GC.
func liveCost() cost {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return cost{runtime.NumGoroutine(), ms.HeapAlloc, ms.StackInuse}
}

// report reports the cost of n requests, from before to after, per request.
func report(b *testing.B, before, after cost, n int) {
	b.ReportMetric(float64(after.goroutines-before.goroutines)/float64(n), "goroutines/req")
	b.ReportMetric(float64(int64(after.heap)-int64(before.heap))/float64(n), "heap-B/req")
	b.ReportMetric(float64(int64(after.stackMem)-int64(before.stackMem))/float64(n), "stack-B/req")
}

// BenchmarkPendingClientRequests leaves 1,000 requests waiting for the one
// permit of a partner whose server holds the request it has, and counts the
// goroutines and live heap they add: "Go" sends them with Transport.Go (a
// record in the queue), "Do" with http.Client.Do from a goroutine each, the
// goroutine-per-request style (the caller's goroutine waits in RoundTrip).
// Run it with -benchtime 1x.
func BenchmarkPendingClientRequests(b *testing.B) {
	const pending = 1000
	for _, name := range []string{"Go", "Do"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				before, after := pendingClientCost(b, name == "Go", pending)
				report(b, before, after, pending)
			}
		})
	}
}

func pendingClientCost(b testing.TB, async bool, n int) (before, after cost) {
	release, arrived := make(chan struct{}), make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	defer srv.Close()
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: n})
	if err != nil {
		b.Fatal(err)
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	tr, err := bulkheadhttp.NewTransport(base, reg)
	if err != nil {
		b.Fatal(err)
	}
	c := &http.Client{Transport: tr}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	send := func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		wg.Add(1)
		if async {
			tr.Go(c, req, func(resp *http.Response, err error) {
				if err == nil {
					resp.Body.Close()
				}
				wg.Done()
			})
			return
		}
		go func() {
			defer wg.Done()
			if resp, err := c.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	send() // takes the permit and holds it in the server
	<-arrived
	before = liveCost()
	for range n {
		send()
	}
	bh, _ := reg.Find(srv.Listener.Addr().String())
	for bh.Metrics().QueuedCalls != n {
		runtime.Gosched() // the Do goroutines are still starting
	}
	after = liveCost()
	cancel()
	close(release)
	wg.Wait()
	return before, after
}
