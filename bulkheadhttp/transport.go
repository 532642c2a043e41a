package bulkheadhttp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/rxbulkhead/bulkhead"
)

// Transport is an http.RoundTripper that sends each request through the
// bulkhead of its partner, taken from a bulkhead.Registry by a key function
// (by default the URL's host). Use it as the Transport of an http.Client;
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
//     the request leaves the queue at once without holding a permit.
//   - The permit is held while the partner works on the call, which is until
//     the response body is closed, read to its end (io.EOF) or fails to read,
//     whichever comes first; or until the base transport fails. It is then
//     given back exactly once, with FinishCall (a CallFinished event), however
//     many times the body is closed or read afterwards. A call the client
//     abandons (a body closed before its end, a context that ends) gives its
//     permit back at once, while the partner's server may go on working on
//     it until it notices the connection is gone: a partner can then see
//     more requests at once than the limit, for that while.
//
// A response body that is never closed nor read to its end keeps its permit
// for good, as it keeps its connection: each such body takes one permit from
// its partner until, with all of them gone, every further request to that
// partner waits and is rejected. net/http already requires callers to close
// every body; testkit.CheckPermits finds the ones a test forgets.
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
// request, or if the request's context ends first.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	bh, err := t.cfg.bulkheadFor(t.reg, req)
	if err == nil {
		// Blocks in this goroutine: the wait is a record in the bulkhead's
		// queue, withdrawn if the context ends first.
		err = acquire(req, bh)
	}
	if err != nil {
		closeRequestBody(req) // RoundTrip closes the body, even on errors
		return nil, err
	}
	// From here this goroutine owns one permit of bh, handed to the
	// response body below or given back on failure.
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		bh.FinishCall()
		return nil, err
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		bh.FinishCall() // nothing left to read: the partner is done
		return resp, nil
	}
	b := &body{rc: resp.Body, bh: bh}
	if rwc, ok := resp.Body.(io.ReadWriteCloser); ok {
		// 101 Switching Protocols: keep the body writable, as
		// http.Client's users expect.
		resp.Body = &rwBody{body: b, w: rwc}
	} else {
		resp.Body = b
	}
	return resp, nil
}

// CloseIdleConnections closes the idle connections of the base transport, if
// it has such a method (http.Client.CloseIdleConnections calls it).
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// body owns the permit of one response until the first Close, end of
// stream or read error; done's CAS decides which of them gives it back.
type body struct {
	rc   io.ReadCloser
	bh   *bulkhead.Semaphore
	done atomic.Bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		b.finish()
	}
	return n, err
}

func (b *body) Close() error {
	err := b.rc.Close()
	b.finish()
	return err
}

func (b *body) finish() {
	if b.done.CompareAndSwap(false, true) {
		b.bh.FinishCall()
	}
}

// rwBody is the body of a 101 Switching Protocols response: writable.
type rwBody struct {
	*body
	w io.Writer
}

func (b *rwBody) Write(p []byte) (int, error) { return b.w.Write(p) }
