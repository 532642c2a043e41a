package bulkheadhttp_test

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
)

// TestStressPermitsComeBackWhateverTheCallerDoes hammers the two races that
// decide who gives a permit back: the body's Close/EOF/read-error CAS (here
// with Close racing Read on another goroutine, and contexts cancelled at
// random points) and Go's hand-over of its permit to RoundTrip. A permit
// given back twice panics; one never given back fails the leak check; a
// lost done call fails the test. (The server may briefly see more requests
// than the limit here: a call abandoned by the client gives its permit back
// before the server notices; see Transport.)
func TestStressPermitsComeBackWhateverTheCallerDoes(t *testing.T) {
	const limit, workers, iterations = 3, 8, 150
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: limit, MaxWaitDuration: 20 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded})
	var calls atomic.Int64
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body)
		if r.URL.Query().Get("slow") != "" {
			select {
			case <-time.After(time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		io.WriteString(w, strings.Repeat("x", 1+len(r.URL.RawQuery)*4096))
	}))
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = limit
	t.Cleanup(base.CloseIdleConnections)
	tr, err := bulkheadhttp.NewTransport(base, reg)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, tr)

	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range iterations {
				url := srv.URL + "/?" + strings.Repeat("q", rng.IntN(3))
				if rng.IntN(2) == 0 {
					url += "&slow=1"
				}
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(4) == 0 {
					time.AfterFunc(time.Duration(rng.IntN(2000))*time.Microsecond, cancel)
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("ISA"))
				use := func(resp *http.Response, err error) {
					if err != nil {
						return
					}
					switch rng.IntN(4) {
					case 0: // read to the end, never close (EOF gives it back)
						io.ReadAll(resp.Body)
					case 1: // read a little, close
						resp.Body.Read(make([]byte, 10))
						resp.Body.Close()
					case 2: // close while another goroutine reads
						var rw sync.WaitGroup
						rw.Go(func() { io.ReadAll(resp.Body) })
						resp.Body.Close()
						rw.Wait()
						resp.Body.Close()
					default: // close twice, read after close
						resp.Body.Close()
						resp.Body.Close()
						resp.Body.Read(make([]byte, 10))
					}
				}
				if rng.IntN(2) == 0 {
					use(c.Do(req))
				} else {
					done := make(chan struct{})
					tr.Go(c, req, func(resp *http.Response, err error) {
						defer close(done)
						use(resp, err)
					})
					select {
					case <-done:
					case <-time.After(waitTimeout):
						t.Error("Go never called done")
					}
				}
				cancel()
			}
		})
	}
	wg.Wait()
	if calls.Load() == 0 {
		t.Fatal("no request reached the server")
	}
	t.Logf("%d of %d requests reached the server", calls.Load(), workers*iterations)
	// testkit.CheckRegistry (newRegistry) checks that every permit came back.
}
