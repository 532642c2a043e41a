package bulkheadhttp_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
	"github.com/rxbulkhead/bulkhead/internal/docfigures"
)

// TestTheGuidesCostOfACancellableRequestIsTheMeasuredOne checks what the
// guide says a request whose context can end pays over one whose context
// never ends ("about 0.3 µs, N allocations and B B more", the
// context.AfterFunc that frees its permit) against the allocations
// BenchmarkTransportRoundTripInMemory measures for each: the allocations
// exactly (rounded), the bytes within 8 B. The time is not checked.
func TestTheGuidesCostOfACancellableRequestIsTheMeasuredOne(t *testing.T) {
	doc, err := docfigures.Find("../docs/guide.md", regexp.MustCompile(`pays about [\d.]+ µs, (\d+) allocations and (\d+) B more for the `+"`context.AfterFunc`"))
	if err != nil {
		t.Fatal(err)
	}
	docAllocs, docBytes := int(doc[0]), doc[1]

	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
	})
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := bulkheadhttp.NewTransport(base, reg)
	if err != nil {
		t.Fatal(err)
	}
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	cost := func(ctx context.Context) (bytes, allocs float64) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:1/", nil)
		buf := make([]byte, 8)
		do := func() {
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			for {
				if _, err := resp.Body.Read(buf); err != nil {
					break
				}
			}
			resp.Body.Close()
		}
		for range 100 {
			do()
		}
		const n = 2000
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			do()
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / n, float64(after.Mallocs-before.Mallocs) / n
	}
	bgBytes, bgAllocs := cost(context.Background())
	cBytes, cAllocs := cost(cancellable)
	dBytes, dAllocs := cBytes-bgBytes, int(cAllocs-bgAllocs+0.5)
	t.Logf("background: %.1f B, %.2f allocs; cancellable: %.1f B, %.2f allocs; more: %.1f B, %d allocs (the guide: %g B, %d)",
		bgBytes, bgAllocs, cBytes, cAllocs, dBytes, dAllocs, docBytes, docAllocs)
	if dAllocs != docAllocs {
		t.Errorf("a cancellable request makes %d allocations more, the guide says %d", dAllocs, docAllocs)
	}
	if d := dBytes - docBytes; d > 8 || d < -8 {
		t.Errorf("a cancellable request allocates %.1f B more, the guide says %g B (±8 B)", dBytes, docBytes)
	}
}
