package bulkheadhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/rxbulkhead/bulkhead"
)

// Transport is an http.RoundTripper that sends each request through the
// bulkhead of its partner, taken from a bulkhead.Registry by a key function
// (by default the URL's host), through the Registry's keyed path
// (Registry.AcquirePermission): the Registry's bulkhead.WithIdleTimeout and
// bulkhead.WithMaxBulkheads bound the bulkheads of hosts taken from user
// data, and a bulkhead is not evicted while a request or a response body
// holds its permit. Use it as the Transport of an http.Client;
// Transport.Go sends a request without blocking its caller.
//
// A request's life with its permit:
//   - RoundTrip takes a permit before the request is sent. If the bulkhead
//     queues the request, RoundTrip waits in the caller's goroutine, bounded
//     by the bulkhead's MaxWaitDuration and the request's context; no other
//     goroutine is started for the wait.
//   - A rejected request is not sent: RoundTrip returns the bulkhead's
//     *bulkhead.FullError, which matches bulkhead.ErrBulkheadFull and names
//     the bulkhead, i.e. the partner. A request whose context ends while it
//     waits is not sent either: RoundTrip returns the context's error, and
//     the request has left the queue, without holding a permit, by then
//     (its goroutine withdraws it when it sees the context end: a moment
//     after the cancel, not within it).
//   - The permit is held while the partner works on the call: until the
//     first of the response body being closed, read to its end (io.EOF) or
//     failing to read, and the request's context ending; or until the base
//     transport fails. It is then given back exactly once, with FinishCall
//     (a CallFinished event), however many times the body is closed or read
//     afterwards. A call the client abandons gives its permit back without
//     waiting for the partner: a body closed before its end before Close
//     returns; a context that ends (also after the headers arrived and with
//     the body never touched) a moment after the cancel, on the goroutine
//     context.AfterFunc starts, so a request sent right after the cancel to
//     a partner with no permit to spare can still be refused (with one
//     permit and no queue, nearly always: close the body first). The
//     partner's server may go on working on an abandoned call until it
//     notices the connection is gone: a partner can then see more requests
//     at once than the limit, for that while.
//
// The body of a 101 Switching Protocols response is the connection, which
// the caller owns and the request's context no longer ends: it holds its
// permit until it is closed or fails to read, whatever the context does.
//
// A response body that is never closed nor read to its end, of a request
// whose context never ends (context.Background()), keeps its permit for
// good, as it keeps its connection: each such body takes one permit from its
// partner until, with all of them gone, every further request to that
// partner waits and is rejected. net/http already requires callers to close
// every body; testkit.CheckPermits finds the ones a test forgets.
//
// Goroutines: the permit of a context that ends is given back on the
// goroutine context.AfterFunc starts for it, which then runs the callbacks
// of the waiter it grants (see bulkhead.Acquisition.OnDone); a Close, a read
// or a failed round trip gives it back on the caller's goroutine.
//
// A Transport is safe for concurrent use.
type Transport struct {
	base http.RoundTripper
	reg  *bulkhead.Registry
	cfg  *config
}

// NewTransport returns a Transport that sends requests with base (nil:
// http.DefaultTransport) through the bulkheads of reg. It reads the options
// WithKey and WithConfigName, and fails if reg is nil or an option is
// invalid or meant for NewMiddleware.
func NewTransport(base http.RoundTripper, reg *bulkhead.Registry, opts ...Option) (*Transport, error) {
	if reg == nil {
		return nil, errors.New("bulkheadhttp: NewTransport: registry is nil")
	}
	cfg, err := newConfig(false, opts)
	if err != nil {
		return nil, fmt.Errorf("bulkheadhttp: NewTransport: %w", err)
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &Transport{base: base, reg: reg, cfg: cfg}, nil
}

// RoundTrip sends req once its bulkhead grants a permit, as described at
// Transport. It fails without sending req, and closes its body, if the key
// function returns "" (a *KeyError), if the bulkhead cannot be created (the
// Registry's error, which names the partner), if the bulkhead rejects the
// request, or if the request's context ends first. If the base transport
// panics or calls runtime.Goexit, the permit is given back (FinishCall) and
// the panic goes on; if it returns a nil *http.Response with a nil error
// (breaking the RoundTripper contract), the permit is given back and
// RoundTrip fails with an error that says so, as http.Client.Do would. A
// response body whose own Close panics still gives its permit back when it
// is closed.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	class := t.cfg.clientClass(req)
	lease, err := t.acquire(req, class)
	if err != nil {
		closeRequestBody(req) // RoundTrip closes the body, even on errors
		return nil, err
	}
	req = t.cfg.withPriorityHeader(req, class)
	// From here this goroutine owns one permit and the Lease's hold on its
	// bulkhead, handed to the response body below or given back on
	// failure, also when base panics or calls runtime.Goexit (a caller, or
	// net/http's server around a handler, may recover the panic and go on).
	returned := false
	defer func() {
		if !returned {
			lease.FinishCall()
		}
	}()
	resp, err := t.base.RoundTrip(req)
	returned = true
	if err == nil && resp == nil {
		// A base that breaks the RoundTripper contract has failed all the
		// same; net/http's Client reports it in these words.
		err = fmt.Errorf("http: RoundTripper implementation (%T) returned a nil *Response with a nil error", t.base)
	}
	if err != nil {
		lease.FinishCall()
		return nil, err
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		lease.FinishCall() // nothing left to read: the partner is done
		return resp, nil
	}
	b := &body{rc: resp.Body, lease: lease}
	if rwc, ok := resp.Body.(io.ReadWriteCloser); ok {
		// 101 Switching Protocols: keep the body writable, as
		// http.Client's users expect. The caller owns the connection now
		// and the request's context no longer ends it, so only Close,
		// EOF or a read error give the permit back.
		resp.Body = &rwBody{body: b, w: rwc}
		return resp, nil
	}
	if ctx := req.Context(); ctx.Done() != nil {
		// The request's context ending frees the permit even if the
		// caller never touches the body again. Registered before resp is
		// returned, so every Read and Close sees stop.
		b.stop = context.AfterFunc(ctx, b.contextEnded)
	}
	resp.Body = b
	return resp, nil
}

// CloseIdleConnections closes the idle connections of the base transport, if
// it has such a method (http.Client.CloseIdleConnections calls it).
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// body owns the permit of one response until the first of Close, end of
// stream, read error and the end of the request's context (stop's
// AfterFunc): those four race, on the caller's goroutines and on
// AfterFunc's, and done's CAS (in release) decides which one gives the
// permit back; the losers do nothing.
type body struct {
	rc    io.ReadCloser
	lease bulkhead.Lease
	stop  func() bool // unregisters the AfterFunc; nil for a context that never ends
	done  atomic.Bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		b.finish()
	}
	return n, err
}

// Close closes the base body and gives the permit back, also if the base
// body's Close panics (the panic then goes on).
func (b *body) Close() error {
	defer b.finish()
	return b.rc.Close()
}

// finish gives the permit back from Close or Read, and unregisters the
// context's AfterFunc so a long-lived context does not keep the body.
func (b *body) finish() {
	if b.release() && b.stop != nil {
		b.stop()
	}
}

// release gives the permit back if nobody did yet, and reports whether it
// did.
func (b *body) release() bool {
	if !b.done.CompareAndSwap(false, true) {
		return false
	}
	b.lease.FinishCall()
	return true
}

// contextEnded is the AfterFunc of the request's context. It reads nothing
// that RoundTrip writes after registering it (stop).
func (b *body) contextEnded() { b.release() }

// rwBody is the body of a 101 Switching Protocols response: writable.
type rwBody struct {
	*body
	w io.Writer
}

func (b *rwBody) Write(p []byte) (int, error) { return b.w.Write(p) }
