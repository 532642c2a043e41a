package bulkheadhttp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
)

// BenchmarkTransportRoundTripInMemory measures what the Transport itself
// costs per request, with a base transport that answers from memory (no
// network): a free permit, the body read to its end and closed. The
// context that can end ("cancellable") also pays for the context.AfterFunc
// that frees the permit when it ends; "background" registers none.
func BenchmarkTransportRoundTripInMemory(b *testing.B) {
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
	})
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		b.Fatal(err)
	}
	tr, err := bulkheadhttp.NewTransport(base, reg)
	if err != nil {
		b.Fatal(err)
	}
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, bc := range []struct {
		name string
		ctx  context.Context
	}{{"background", context.Background()}, {"cancellable", cancellable}} {
		b.Run(bc.name, func(b *testing.B) {
			req, _ := http.NewRequestWithContext(bc.ctx, http.MethodGet, "http://127.0.0.1:1/", nil)
			buf := make([]byte, 8)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := resp.Body.Read(buf); err != nil {
						break
					}
				}
				resp.Body.Close()
			}
		})
	}
}
