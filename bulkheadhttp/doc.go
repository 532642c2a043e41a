// Package bulkheadhttp puts net/http calls behind bulkheads: a client
// Transport that limits the requests in flight to each partner, and a server
// middleware that limits the requests a handler serves at once per route,
// tenant or client. Both take their bulkheads from a [bulkhead.Registry], one
// per key, so events, metrics and the Prometheus and OpenTelemetry collectors
// see them like any other bulkhead.
//
// A request waiting for a permit waits in the goroutine that already runs it
// (the caller of http.Client.Do, or the goroutine net/http runs for a server
// request), as a record in its bulkhead's queue: the package starts no
// goroutine.
//
// Client: [NewTransport] returns an http.RoundTripper. A request takes a
// permit before it is sent and gives it back when the response body is
// closed or read to its end; a rejected request is not sent and fails with
// the bulkhead's [*bulkhead.FullError], which matches [bulkhead.ErrBulkheadFull]
// and names the partner.
//
// Server: [NewMiddleware] returns a func(http.Handler) http.Handler. A full
// bulkhead answers 503 with Retry-After without running the handler; a
// queued request whose context ends (an outer timeout, a client that goes
// away) leaves the queue, costs no permit and is answered the same
// rejection, never 200.
//
// With a Registry joined to a budget (bulkhead.WithBudget), both sides give
// a request the budget class of failsafe-go's X-Failsafe-Priority header
// or of its context (bulkhead.WithPriority) and carry it to the next hop
// (WithPriorityClasses).
//
// The name follows net/http's contrib convention (promhttp, otelhttp): it
// does not shadow net/http where both are imported.
package bulkheadhttp
