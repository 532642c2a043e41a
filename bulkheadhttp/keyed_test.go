package bulkheadhttp_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
	"github.com/rxbulkhead/bulkhead/testkit"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newKeyedRegistry(t *testing.T, cfg bulkhead.Config, opts ...bulkhead.RegistryOption) (*bulkhead.Registry, *testkit.VirtualClock) {
	t.Helper()
	clock := testkit.NewVirtualClock(epoch)
	reg := newRegistry(t, cfg, append([]bulkhead.RegistryOption{bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock))}, opts...)...)
	return reg, clock
}

func tenantRequest(tenant string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("X-Tenant", tenant)
	return r
}

var byTenant = bulkheadhttp.WithKey(func(r *http.Request) string { return r.Header.Get("X-Tenant") })

func TestMiddlewareSendsKeysBeyondTheCapToTheCatchAllAndEvictsIdleKeys(t *testing.T) {
	reg, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1},
		bulkhead.WithIdleTimeout(time.Minute), bulkhead.WithMaxBulkheads(2, bulkhead.Config{MaxConcurrentCalls: 1}))
	mw, err := bulkheadhttp.NewMiddleware(reg, byTenant)
	require.NoError(t, err)
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	for i := range 5 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, tenantRequest(fmt.Sprint("tenant-", i)))
		assert.Equal(t, http.StatusOK, w.Code, "tenant-%d: %s", i, w.Body)
	}
	assert.Equal(t, bulkhead.RegistryStats{Bulkheads: 3, CatchAllCalls: 3}, reg.Stats())
	clock.Advance(2 * time.Minute)
	assert.Equal(t, bulkhead.RegistryStats{Bulkheads: 1, Evictions: 2, CatchAllCalls: 3}, reg.Stats(), "idle tenants must be evicted")
}

func TestMiddlewareKeepsTheBulkheadOfARunningHandler(t *testing.T) {
	reg, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.WithIdleTimeout(time.Minute))
	mw, err := bulkheadhttp.NewMiddleware(reg, byTenant)
	require.NoError(t, err)
	w := httptest.NewRecorder()
	done := make(chan struct{})
	hold := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clock.Advance(time.Hour)
		assert.Equal(t, 1, reg.Stats().Bulkheads, "evicted while its handler runs")
		rec := httptest.NewRecorder()
		mw(http.NotFoundHandler()).ServeHTTP(rec, tenantRequest("acme"))
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code, "a second bulkhead admitted the key while its permit is held")
		close(done)
	}))
	hold.ServeHTTP(w, tenantRequest("acme"))
	<-done
	clock.Advance(time.Hour)
	assert.Equal(t, 0, reg.Stats().Bulkheads)
}

type bodyTransport struct{}

func (bodyTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("hello")), Header: http.Header{}}, nil
}

func TestTransportResponseBodyHoldsItsBulkheadAgainstEviction(t *testing.T) {
	reg, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.WithIdleTimeout(time.Minute))
	tr, err := bulkheadhttp.NewTransport(bodyTransport{}, reg)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(httptest.NewRequest(http.MethodGet, "http://partner.test/", nil))
	require.NoError(t, err)
	clock.Advance(time.Hour)
	assert.Equal(t, 1, reg.Stats().Bulkheads, "evicted while a response body holds its permit")
	_, err = tr.RoundTrip(httptest.NewRequest(http.MethodGet, "http://partner.test/", nil))
	assert.ErrorIs(t, err, bulkhead.ErrBulkheadFull, "a second bulkhead admitted the partner while its permit is held")
	resp.Body.Close()
	clock.Advance(time.Hour)
	assert.Equal(t, bulkhead.RegistryStats{Evictions: 1}, reg.Stats())
}

// TestStressMiddlewareKeysFloodWhileIdleBulkheadsAreEvicted races requests
// on a few keys (handlers that yield, re-enter the middleware and panic)
// against sweeps on virtual time: no key ever runs more handlers than its
// limit (counted by the handler, not the bulkhead), and every permit comes
// back (CheckRegistry).
func TestStressMiddlewareKeysFloodWhileIdleBulkheadsAreEvicted(t *testing.T) {
	const limit, keys, workers, iterations = 2, 6, 8, 300
	reg, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: limit, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
		bulkhead.WithIdleTimeout(time.Second))
	mw, err := bulkheadhttp.NewMiddleware(reg, byTenant)
	require.NoError(t, err)
	var inFlight [keys]atomic.Int64
	var over atomic.Int64
	var h http.Handler
	h = mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var k int
		fmt.Sscan(strings.TrimPrefix(r.Header.Get("X-Tenant"), "k"), &k)
		if inFlight[k].Add(1) > limit {
			over.Add(1)
		}
		defer inFlight[k].Add(-1)
		switch r.Header.Get("X-Do") {
		case "panic":
			panic(http.ErrAbortHandler)
		case "reenter":
			h.ServeHTTP(httptest.NewRecorder(), tenantRequest(fmt.Sprint("k", (k+1)%keys)))
		}
	}))
	stop := make(chan struct{})
	var ticker sync.WaitGroup
	ticker.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				clock.Advance(300 * time.Millisecond)
			}
		}
	})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range iterations {
				r := tenantRequest(fmt.Sprint("k", rng.IntN(keys)))
				switch rng.IntN(8) {
				case 0:
					r.Header.Set("X-Do", "panic")
				case 1:
					r.Header.Set("X-Do", "reenter")
				}
				func() {
					defer func() { _ = recover() }()
					h.ServeHTTP(httptest.NewRecorder(), r)
				}()
			}
		})
	}
	wg.Wait()
	close(stop)
	ticker.Wait()
	assert.Zero(t, over.Load(), "a key ran more handlers than its limit")
	clock.Advance(time.Hour)
	assert.Equal(t, 0, reg.Stats().Bulkheads, "every idle bulkhead is evicted at the end")
	assert.NotZero(t, reg.Stats().Evictions)
}
