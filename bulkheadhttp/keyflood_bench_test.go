package bulkheadhttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// BenchmarkMiddlewareKeyFlood is issue 25's memory proof through the
// middleware: a handler chain keyed by the X-Tenant header, served with
// httptest.NewRecorder, while a flood of distinct tenants (one request
// each) grows from 1,000 to 1,000,000, interleaved with steady traffic
// from 20 legitimate tenants. The registry caps its bulkheads at
// mwFloodCap, evicts them after an idle second of virtual time, and has an
// event listener on every bulkhead (as the exporters have); the flood
// sends 50,000 tenants per virtual second. It reports the heap after GC
// (the registry and what hangs off it) and fails if a legitimate tenant is
// ever answered anything but 200 or admitted by the catch-all. Not part of
// `make test`:
//
//	go test -run '^$' -bench BenchmarkMiddlewareKeyFlood -benchtime 1x ./bulkheadhttp
func BenchmarkMiddlewareKeyFlood(b *testing.B) {
	for _, keys := range []int{1_000, 10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprint("keys=", keys), func(b *testing.B) {
			for b.Loop() {
				middlewareKeyFlood(b, keys)
			}
		})
	}
}

const (
	mwFloodCap     = 20_000
	mwFloodPerTick = 5_000 // per 100 ms of virtual time
	mwFloodLegit   = 20
)

func middlewareKeyFlood(b *testing.B, keys int) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	before := heapInUse()
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 4},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)),
		bulkhead.WithIdleTimeout(time.Second),
		bulkhead.WithMaxBulkheads(mwFloodCap, bulkhead.Config{MaxConcurrentCalls: 8}))
	if err != nil {
		b.Fatal(err)
	}
	// Counts the permits legitimate tenants got from their own bulkhead:
	// the event names the bulkhead that granted it.
	var legitOwn atomic.Int64
	remove := reg.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallPermitted && strings.HasPrefix(e.Name, "partner-") {
			legitOwn.Add(1)
		}
	})
	defer remove()
	mw, err := bulkheadhttp.NewMiddleware(reg, byTenant, bulkheadhttp.WithRejectStatus(http.StatusTooManyRequests))
	if err != nil {
		b.Fatal(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	serve := func(tenant string) int {
		req.Header.Set("X-Tenant", tenant) // one request, re-keyed: the handler chain is what is measured
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	legit := make([]string, mwFloodLegit)
	for i := range legit {
		legit[i] = fmt.Sprintf("partner-%02d", i)
	}
	steady := func() {
		want := legitOwn.Load() + mwFloodLegit
		for _, k := range legit {
			if code := serve(k); code != http.StatusOK {
				b.Fatalf("legitimate tenant %s answered %d during the flood", k, code)
			}
		}
		if got := legitOwn.Load(); got != want {
			b.Fatalf("legitimate tenants: %d permits from their own bulkheads, want %d (the rest went to the catch-all)", got, want)
		}
	}
	steady()
	for i := range keys {
		serve(fmt.Sprintf("attacker-%07d", i)) // 200, or 429 from the catch-all
		if (i+1)%mwFloodPerTick == 0 {
			clock.Advance(100 * time.Millisecond)
			steady()
		}
	}
	after := heapInUse()
	st := reg.Stats()
	b.ReportMetric(float64(after-before)/(1<<20), "MiB")
	b.ReportMetric(float64(after-before)/float64(st.Bulkheads), "B/live-bulkhead")
	b.ReportMetric(float64(st.Bulkheads), "live")
	b.ReportMetric(float64(st.Evictions), "evicted")
	b.ReportMetric(float64(st.CatchAllCalls), "catch-all-calls")
	runtime.KeepAlive(reg)
	runtime.KeepAlive(h)
}

// heapInUse is the live heap after two GCs.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
