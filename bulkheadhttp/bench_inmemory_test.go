package bulkheadhttp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
)

// BenchmarkMiddlewareInMemory is what the middleware costs per request on
// its own: one request served with httptest.NewRecorder through the
// trivial handler, bare and behind the middleware (a free permit each
// time, one key).
func BenchmarkMiddlewareInMemory(b *testing.B) {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		b.Fatal(err)
	}
	mw, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithKey(func(*http.Request) string { return "orders" }))
	if err != nil {
		b.Fatal(err)
	}
	for _, h := range []struct {
		name string
		h    http.Handler
	}{{"bare", http.HandlerFunc(trivial)}, {"bulkhead", mw(http.HandlerFunc(trivial))}} {
		b.Run(h.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			b.ReportAllocs()
			for b.Loop() {
				h.h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}
