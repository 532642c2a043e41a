package bulkheadhttp

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/rxbulkhead/bulkhead"
)

// Go sends req with client once req's bulkhead grants a permit, without
// blocking the caller, and calls done with the outcome. client's Transport
// must be t; a nil client means one with Transport t and no other settings.
//
// What it costs: while req waits for its permit it is a record in its
// bulkhead's queue and no goroutine runs for it. When the permit is granted,
// a new goroutine sends req with client.Do and calls done with its result;
// the permit is then held as for RoundTrip, until done's response body is
// closed or read to its end. If the request is not sent, done is called
// with no response and an error, on the goroutine that decided it: at once
// on the caller's for a key or bulkhead error (as for RoundTrip) or an
// immediate rejection; on the bulkhead's timer goroutine for a wait that
// timed out (a *bulkhead.FullError); on a goroutine of its own
// (context.AfterFunc's) for a request withdrawn because its context ended
// while it waited (the context's error). done must not block for long on
// the timer goroutine: hand long work to another goroutine.
//
// If done panics or calls runtime.Goexit (t.FailNow in a test) on the
// goroutine Go started, Go closes the response's body, so its permit comes
// back; a panic then goes on and ends the program, as any panic in a
// goroutine does.
//
// Go panics if done is nil. A client whose Transport is not t fails the
// request with an error, without sending it.
func (t *Transport) Go(client *http.Client, req *http.Request, done func(*http.Response, error)) {
	if done == nil {
		panic("bulkheadhttp: Transport.Go called with a nil done func")
	}
	if client == nil {
		client = &http.Client{Transport: t}
	} else if client.Transport != t {
		closeRequestBody(req)
		done(nil, errors.New("bulkheadhttp: Transport.Go: the client's Transport is not this Transport"))
		return
	}
	key, err := t.cfg.keyFor(req)
	ctx := req.Context()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		closeRequestBody(req)
		done(nil, err)
		return
	}
	// The keyed path: the call holds its bulkhead until the outcome is a
	// rejection or a withdrawal, or, once granted, until the Lease gives
	// the permit back (through RoundTrip's body, or giveBackUnused).
	a, lease := t.reg.AcquirePermissionAsync(key, t.cfg.callOptions(key, t.cfg.clientClass(req)))
	// A context that ends while req waits withdraws it. AfterFunc starts no
	// goroutine unless the context ends.
	stop := func() bool { return true }
	if ctx.Done() != nil && a.Err() == bulkhead.ErrPending {
		stop = context.AfterFunc(ctx, func() { a.Cancel() })
	}
	a.OnDone(func(err error) {
		stop()
		if err != nil {
			if errors.Is(err, bulkhead.ErrCancelled) {
				err = ctx.Err()
			}
			closeRequestBody(req)
			done(nil, err)
			return
		}
		// The permit is this callback's; it travels to RoundTrip in the
		// request's context, which takes it instead of acquiring one. The
		// call starts here, at its grant (Lease.StartCall), for the
		// CallDuration of its CallFinished.
		lease.StartCall()
		h := &heldPermit{key: key, lease: lease}
		go send(client, req.WithContext(context.WithValue(ctx, heldPermitKey{}, h)), h, done)
	})
}

// send runs on the goroutine Go starts for a granted request: it sends req
// with client and calls done with the result. If client.Do or done panics
// or calls runtime.Goexit, the deferred path still gives back a permit
// RoundTrip never took, and closes the response's body (which gives its
// permit back) if done did not return.
func send(client *http.Client, req *http.Request, h *heldPermit, done func(*http.Response, error)) {
	var resp *http.Response
	returned := false
	defer func() {
		if returned {
			return
		}
		h.giveBackUnused()
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
	}()
	resp, err := client.Do(req)
	// client.Do failed before it reached RoundTrip (a bad URL, for
	// instance): the permit was never used.
	h.giveBackUnused()
	done(resp, err)
	returned = true
}

// heldPermit is a permit granted to Go, handed to the first RoundTrip of its
// request for the same bulkhead. taken's CAS decides whether RoundTrip (the
// permit then follows its rules) or Go (it gives it back unused) owns it.
type heldPermit struct {
	key   string
	lease bulkhead.Lease
	taken atomic.Bool
}

// giveBackUnused gives the permit back if RoundTrip did not take it.
func (h *heldPermit) giveBackUnused() {
	if h.taken.CompareAndSwap(false, true) {
		h.lease.ReleasePermission()
	}
}

type heldPermitKey struct{}

// acquire takes req's permit and the Lease to give it back with: the one
// Go holds for it if req's key is the one Go acquired for, or a new one
// from the keyed path, waiting with the request's context.
func (t *Transport) acquire(req *http.Request, class string) (bulkhead.Lease, error) {
	key, err := t.cfg.keyFor(req)
	if err != nil {
		return bulkhead.Lease{}, err
	}
	if h, ok := req.Context().Value(heldPermitKey{}).(*heldPermit); ok && h.key == key && h.taken.CompareAndSwap(false, true) {
		return h.lease, nil
	}
	return t.reg.AcquirePermission(req.Context(), key, t.cfg.callOptions(key, class))
}

func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
