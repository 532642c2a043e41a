package bulkheadhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
)

// WithRejectStatus(429): a full bulkhead and a withdrawn request are both
// answered 429 with Retry-After and the rejection's text; without it, 503.
func TestMiddlewareRejectStatusAppliesToFullAndWithdrawn(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []bulkheadhttp.Option
		want int
	}{
		{"default", nil, http.StatusServiceUnavailable},
		{"429", []bulkheadhttp.Option{bulkheadhttp.WithRejectStatus(http.StatusTooManyRequests)}, http.StatusTooManyRequests},
		{"503 given", []bulkheadhttp.Option{bulkheadhttp.WithRejectStatus(http.StatusServiceUnavailable)}, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// One tenant waits, another does not.
				reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1},
					bulkhead.WithConfig("queued", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1}))
				opts := append([]bulkheadhttp.Option{
					bulkheadhttp.WithKey(func(r *http.Request) string { return r.Header.Get("X-Tenant") }),
					bulkheadhttp.WithConfigName(func(key string) string {
						if key == "queued" {
							return "queued"
						}
						return "default"
					}),
				}, tc.opts...)
				mw, err := bulkheadhttp.NewMiddleware(reg, opts...)
				if err != nil {
					t.Fatal(err)
				}
				h := newHoldFirst()
				limited := mw(h)
				serve := func(ctx context.Context, tenant string) *httptest.ResponseRecorder {
					rec := httptest.NewRecorder()
					req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader("x")).WithContext(ctx)
					req.Header.Set("X-Tenant", tenant)
					limited.ServeHTTP(rec, req)
					return rec
				}
				for _, tenant := range []string{"nowait", "queued"} {
					go serve(context.Background(), tenant)
					<-h.arrived
				}
				full := serve(context.Background(), "nowait")
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				withdrawn := serve(ctx, "queued")
				cancel()
				for name, rec := range map[string]*httptest.ResponseRecorder{"full": full, "withdrawn": withdrawn} {
					if rec.Code != tc.want || rec.Header().Get("Retry-After") != "1" {
						t.Errorf("%s: %d (Retry-After %q), want %d with Retry-After 1", name, rec.Code, rec.Header().Get("Retry-After"), tc.want)
					}
				}
				if !strings.Contains(full.Body.String(), "full") || !strings.Contains(withdrawn.Body.String(), "withdrawn") {
					t.Errorf("bodies %q and %q do not say why", full.Body.String(), withdrawn.Body.String())
				}
				close(h.release)
				synctest.Wait()
			})
		})
	}
}

func TestMiddlewareRejectStatusRefusesOtherValuesAndTheRejectHandler(t *testing.T) {
	reg := newRegistry(t, bulkhead.DefaultConfig())
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"500", func() error {
			_, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithRejectStatus(500))
			return err
		},
			"WithRejectStatus: status must be 503 (Service Unavailable) or 429 (Too Many Requests), got 500"},
		{"0", func() error { _, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithRejectStatus(0)); return err }, "got 0"},
		{"on a transport", func() error {
			_, err := bulkheadhttp.NewTransport(nil, reg, bulkheadhttp.WithRejectStatus(http.StatusTooManyRequests))
			return err
		}, "WithRejectStatus is an option of NewMiddleware"},
		{"with a reject handler", func() error {
			_, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithRejectStatus(http.StatusTooManyRequests),
				bulkheadhttp.WithRejectHandler(func(http.ResponseWriter, *http.Request, error) {}))
			return err
		}, "WithRejectStatus and WithRejectHandler both given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
