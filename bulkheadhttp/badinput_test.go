package bulkheadhttp_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
)

func TestConstructorsRefuseBadInputWithAnErrorThatSaysWhat(t *testing.T) {
	reg := newRegistry(t, bulkhead.DefaultConfig())
	cases := []struct {
		name string
		make func() error
		want string
	}{
		{"transport nil registry", func() error { _, err := bulkheadhttp.NewTransport(nil, nil); return err }, "NewTransport: registry is nil"},
		{"middleware nil registry", func() error { _, err := bulkheadhttp.NewMiddleware(nil); return err }, "NewMiddleware: registry is nil"},
		{"nil key", func() error { _, err := bulkheadhttp.NewTransport(nil, reg, bulkheadhttp.WithKey(nil)); return err }, "WithKey: key function is nil"},
		{"nil option", func() error { _, err := bulkheadhttp.NewMiddleware(reg, nil); return err }, "option #1 is nil"},
		{"nil config name", func() error {
			_, err := bulkheadhttp.NewTransport(nil, reg, bulkheadhttp.WithConfigName(nil))
			return err
		}, "WithConfigName: function is nil"},
		{"server option on transport", func() error {
			_, err := bulkheadhttp.NewTransport(nil, reg, bulkheadhttp.WithRetryAfter(time.Second))
			return err
		}, "WithRetryAfter is an option of NewMiddleware"},
		{"negative retry-after", func() error { _, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithRetryAfter(-1)); return err }, "must be >= 0"},
		{"nil reject handler", func() error {
			_, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithRejectHandler(nil))
			return err
		}, "WithRejectHandler: handler is nil"},
		{"nil error handler", func() error {
			_, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithErrorHandler(nil))
			return err
		}, "WithErrorHandler: handler is nil"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.make()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// retailersRegistry knows the configurations "default" and "retailers". A
// Registry validates every configuration it is given, so the configuration
// a request's partner cannot get is one the Registry does not know.
func retailersRegistry(t *testing.T) *bulkhead.Registry {
	t.Helper()
	return newRegistry(t, bulkhead.DefaultConfig(), bulkhead.WithConfig("retailers", bulkhead.Config{MaxConcurrentCalls: 50}))
}

func TestTransportBadKeyOrConfigFailsTheRequestWithoutSendingIt(t *testing.T) {
	p := newPartner(t, false, "ok")
	cases := []struct {
		name string
		opts []bulkheadhttp.Option
		want string
	}{
		{"empty key", []bulkheadhttp.Option{bulkheadhttp.WithKey(func(*http.Request) string { return "" })},
			"the key function returned an empty bulkhead name for POST http://"},
		{"unknown config", []bulkheadhttp.Option{
			bulkheadhttp.WithKey(func(*http.Request) string { return "walmart" }),
			bulkheadhttp.WithConfigName(func(string) string { return "suppliers" })},
			`bulkhead "walmart": unknown config "suppliers" (known: default, retailers)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTransport(t, retailersRegistry(t), tc.opts...)
			body := &closeRecorder{Reader: strings.NewReader("ISA")}
			resp, err := c.Post(p.URL, "text/plain", body)
			if err == nil {
				resp.Body.Close()
				t.Fatal("request sent")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
			if !body.closed {
				t.Error("the request body was not closed")
			}
		})
	}
	if got := p.received.Load(); got != 0 {
		t.Errorf("the server received %d requests, want 0", got)
	}
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestMiddlewareBadKeyOrConfigAnswers500WithoutRunningTheHandler(t *testing.T) {
	cases := []struct {
		name   string
		tenant string
		opts   []bulkheadhttp.Option
		want   string
	}{
		{"empty key", "", nil, "the key function returned an empty bulkhead name for GET /"},
		{"unknown config", "acme", []bulkheadhttp.Option{bulkheadhttp.WithConfigName(func(string) string { return "suppliers" })},
			`bulkhead "acme": unknown config "suppliers" (known: default, retailers)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newHandlerPartner(false, "ok")
			srv := limitedServer(t, retailersRegistry(t), p, tc.opts...)
			r := await(t, tenantGet(t.Context(), t, bareClient(t), srv.URL, tc.tenant))
			if r.err == nil || !strings.HasPrefix(r.err.Error(), "500") || !strings.Contains(r.err.Error(), tc.want) {
				t.Errorf("response: %v; want 500 containing %q", r.err, tc.want)
			}
			if got := p.received.Load(); got != 0 {
				t.Errorf("handler ran %d times, want 0", got)
			}
		})
	}
}

func TestMiddlewareOnANilHandlerAnswers500(t *testing.T) {
	reg := newRegistry(t, bulkhead.DefaultConfig())
	mw, err := bulkheadhttp.NewMiddleware(reg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/x", mw(nil))
	srv := newServer(t, mux)
	resp, err := bareClient(t).Get(srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(b), "nil handler") {
		t.Errorf("%s %q; want 500 naming the nil handler", resp.Status, b)
	}
}
