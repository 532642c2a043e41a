package bulkheadhttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// budgetedRegistry is a registry joined to a budget with the classes of
// bulkhead.DefaultPriorityClasses (sheddable is the default).
func budgetedRegistry(t *testing.T) (*bulkhead.Registry, *bulkhead.Budget) {
	t.Helper()
	cls := func(name string) bulkhead.ClassConfig {
		return bulkhead.ClassConfig{Name: name, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded}
	}
	b, err := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{Size: 100, MaxQueuedCalls: bulkhead.Unbounded,
		Classes: []bulkhead.ClassConfig{cls("critical"), cls("normal"), cls("sheddable")}})
	require.NoError(t, err)
	testkit.CheckBudget(t, b)
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithBudget(b, nil),
		bulkhead.WithIdleTimeout(time.Minute), bulkhead.WithMaxBulkheads(100, bulkhead.Config{MaxConcurrentCalls: 10}))
	require.NoError(t, err)
	testkit.CheckRegistry(t, reg)
	return reg, b
}

// classesInUse returns the budget's permits in use by class, the empty
// ones left out.
func classesInUse(b *bulkhead.Budget) map[string]int {
	out := map[string]int{}
	for _, c := range b.Metrics().Classes {
		if c.InUse != 0 {
			out[c.Name] = c.InUse
		}
	}
	return out
}

// TestMiddlewareTakesTheClassFromFailsafeGosHeaderAndIgnoresHostileValues
// sends requests over a real server on 127.0.0.1 with failsafe-go's
// priority and level headers, valid and hostile, and records, while the
// handler runs, the class its call holds in the budget and the class its
// context carries.
func TestMiddlewareTakesTheClassFromFailsafeGosHeaderAndIgnoresHostileValues(t *testing.T) {
	reg, b := budgetedRegistry(t)
	type seen struct {
		inUse map[string]int
		ctx   string
	}
	got := make(chan seen, 1)
	mw, err := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithKey(func(*http.Request) string { return "acme" }))
	require.NoError(t, err)
	srv := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{classesInUse(b), bulkhead.PriorityFrom(r.Context())}
	})))
	defer srv.Close()
	partners := b.Metrics().Partners

	for _, tc := range []struct {
		name, header, value, want string
	}{
		{"very high", bulkhead.PriorityHeader, "4", "critical"},
		{"high", bulkhead.PriorityHeader, "3", "critical"},
		{"medium", bulkhead.PriorityHeader, "2", "normal"},
		{"very low", bulkhead.PriorityHeader, "0", "sheddable"},
		{"level 350", bulkhead.LevelHeader, "350", "critical"},
		{"level 250", bulkhead.LevelHeader, "250", "normal"},
		{"out of range", bulkhead.PriorityHeader, "5", ""},
		{"negative", bulkhead.PriorityHeader, "-1", ""},
		{"padded", bulkhead.PriorityHeader, "04", ""},
		{"a class name", bulkhead.PriorityHeader, "critical", ""},
		{"fullwidth digit", bulkhead.PriorityHeader, "４", ""},
		{"level out of range", bulkhead.LevelHeader, "500", ""},
		{"level too long", bulkhead.LevelHeader, "0000350", ""},
		{"64 KB", bulkhead.PriorityHeader, strings.Repeat("4", 64<<10), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
			require.NoError(t, err)
			req.Header.Set(tc.header, tc.value)
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			s := <-got
			want := tc.want
			if want == "" {
				want = "sheddable" // the partner's class: the budget's default
			}
			assert.Equal(t, map[string]int{want: 1}, s.inUse, "the class of the call in the budget")
			assert.Equal(t, tc.want, s.ctx, "the class in the handler's context")
		})
	}
	assert.Equal(t, partners+1, b.Metrics().Partners, "one partner, acme's, whatever the headers")
	assert.Len(t, b.Metrics().Classes, 3, "no header creates a class")
}

// TestTransportSendsTheContextsClassAsFailsafeGosHeaderAcrossHops chains
// client -> front (middleware) -> its handler's client (Transport) -> back,
// all over 127.0.0.1: the class the first client puts in its context
// reaches the back end as X-Failsafe-Priority, and each hop's budget sees
// the call in that class.
func TestTransportSendsTheContextsClassAsFailsafeGosHeaderAcrossHops(t *testing.T) {
	frontReg, frontBudget := budgetedRegistry(t)
	hopReg, hopBudget := budgetedRegistry(t)
	clientReg, clientBudget := budgetedRegistry(t)
	// What the back end sees while it serves: the header, and the classes
	// the calls on their way to it hold in the first client's budget and in
	// the front's handler's.
	type seen struct {
		header      string
		client, hop map[string]int
	}
	backSaw := make(chan seen, 1)
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		backSaw <- seen{r.Header.Get(bulkhead.PriorityHeader), classesInUse(clientBudget), classesInUse(hopBudget)}
	}))
	defer back.Close()

	hop, err := bulkheadhttp.NewTransport(nil, hopReg)
	require.NoError(t, err)
	hopClient := &http.Client{Transport: hop}
	defer hopClient.CloseIdleConnections()
	mw, err := bulkheadhttp.NewMiddleware(frontReg, bulkheadhttp.WithKey(func(*http.Request) string { return "front" }))
	require.NoError(t, err)
	front := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, back.URL, nil)
		resp, err := hopClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	})))
	defer front.Close()

	tr, err := bulkheadhttp.NewTransport(nil, clientReg)
	require.NoError(t, err)
	client := &http.Client{Transport: tr}
	defer client.CloseIdleConnections()
	get := func(c *http.Client, req *http.Request) {
		t.Helper()
		resp, err := c.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}

	ctx := bulkhead.WithPriority(context.Background(), "critical")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, front.URL, nil)
	require.NoError(t, err)
	get(client, req)
	s := <-backSaw
	assert.Equal(t, "3", s.header, "critical is failsafe-go's High at the last hop")
	assert.Equal(t, map[string]int{"critical": 1}, s.client, "the first client's call, from its context")
	assert.Equal(t, map[string]int{"critical": 1}, s.hop, "the front's handler's own call, from the header the front read")
	assert.Empty(t, req.Header.Get(bulkhead.PriorityHeader), "the caller's request is not changed")
	assert.Empty(t, classesInUse(frontBudget))

	// A header the caller set is sent as it is, and gives the class.
	req, _ = http.NewRequest(http.MethodGet, back.URL, nil)
	req.Header.Set(bulkhead.PriorityHeader, "2")
	get(client, req)
	s = <-backSaw
	assert.Equal(t, "2", s.header)
	assert.Equal(t, map[string]int{"normal": 1}, s.client)

	// The zero PriorityClasses: no header sent, the context's class still
	// used.
	off, err := bulkheadhttp.NewTransport(nil, clientReg, bulkheadhttp.WithPriorityClasses(bulkhead.PriorityClasses{}))
	require.NoError(t, err)
	offClient := &http.Client{Transport: off}
	defer offClient.CloseIdleConnections()
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, back.URL, nil)
	get(offClient, req)
	s = <-backSaw
	assert.Empty(t, s.header)
	assert.Equal(t, map[string]int{"critical": 1}, s.client)
}
