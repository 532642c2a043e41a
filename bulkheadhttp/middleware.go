package bulkheadhttp

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// NewMiddleware returns a middleware that limits the requests a handler
// serves at once, per key (by default the ServeMux route, see Pattern), with
// the bulkheads of reg. It reads every option, and fails if reg is nil or an
// option is invalid.
//
// For each request the middleware takes a permit from the request's bulkhead
// before the handler runs, through the Registry's keyed path
// (Registry.AcquirePermission: with bulkhead.WithIdleTimeout and
// bulkhead.WithMaxBulkheads, keys from untrusted input are bounded; keys
// beyond the cap share the catch-all), and gives it back (FinishCall,
// through its Lease) when the handler returns, also if it panics or calls
// runtime.Goexit. The bulkhead is not evicted while its handler runs. While the bulkhead queues the request, the wait
// happens in the goroutine net/http already runs for the request, as a
// record in the bulkhead's queue: no goroutine is added.
//
//   - Full (rejected): the handler does not run; the response is 503
//     Service Unavailable (or 429, WithRejectStatus) with a Retry-After
//     header (WithRetryAfter), or what WithRejectHandler writes.
//   - Withdrawn: the request's context ends before a permit is granted (an
//     outer timeout middleware that wraps r.Context(), a server whose
//     BaseContext is cancelled, a client that went away). The request leaves
//     the queue as soon as its goroutine sees the context end (a moment
//     after the cancel, not within it) and holds no permit; the handler
//     does not run; the response is the same rejection as for a full
//     bulkhead (503 or 429 with Retry-After, or what WithRejectHandler
//     writes, given a *WithdrawnError), never net/http's implicit 200 OK
//     for a handler that wrote nothing. To a client that went away
//     net/http sends nothing, so for it nothing changes.
//     http.Server.Shutdown cancels no request's context: queued requests
//     go on waiting while it waits for them.
//   - No bulkhead (the key is "", or the bulkhead cannot be created): the
//     handler does not run; the response is 500 with the error's text, or
//     what WithErrorHandler writes.
//
// net/http cancels the context of an HTTP/1.x request when its client goes
// away only once the request body has been read: a request without a body
// (GET) is withdrawn at once, one whose body the handler has not read yet
// waits until it is granted or its MaxWaitDuration ends. HTTP/2 cancels the
// request of a reset stream at once.
func NewMiddleware(reg *bulkhead.Registry, opts ...Option) (func(http.Handler) http.Handler, error) {
	if reg == nil {
		return nil, errors.New("bulkheadhttp: NewMiddleware: registry is nil")
	}
	cfg, err := newConfig(true, opts)
	if err != nil {
		return nil, fmt.Errorf("bulkheadhttp: NewMiddleware: %w", err)
	}
	switch {
	case cfg.reject != nil && cfg.rejectStatusSet:
		return nil, errors.New("bulkheadhttp: NewMiddleware: WithRejectStatus and WithRejectHandler both given: the reject handler writes its own status")
	case cfg.reject == nil:
		cfg.reject = rejection(cfg.rejectStatus, cfg.retryAfter)
	}
	if cfg.fail == nil {
		cfg.fail = internalError
	}
	return func(next http.Handler) http.Handler {
		if next == nil {
			// A misuse at setup time, not in the request path: answer
			// every request with the error instead of panicking later.
			next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				cfg.fail(w, r, errors.New("bulkheadhttp: middleware applied to a nil handler"))
			})
		}
		return &limited{next: next, reg: reg, cfg: cfg}
	}, nil
}

// limited is one handler behind the middleware.
type limited struct {
	next http.Handler
	reg  *bulkhead.Registry
	cfg  *config
}

func (l *limited) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, err := l.cfg.keyFor(r)
	if err != nil {
		l.cfg.fail(w, r, err)
		return
	}
	class := l.cfg.headerClass(r.Header)
	if class == "" {
		class = bulkhead.PriorityFrom(r.Context())
	} else if class != bulkhead.PriorityFrom(r.Context()) {
		r = r.WithContext(bulkhead.WithPriority(r.Context(), class))
	}
	lease, err := l.reg.AcquirePermission(r.Context(), key, l.cfg.callOptions(key, class))
	switch {
	case err == nil:
		// This goroutine owns the permit, and the Lease's hold on its
		// bulkhead, until the handler returns (also by a panic or
		// runtime.Goexit): the deferred FinishCall gives both back once.
		defer lease.FinishCall()
		l.next.ServeHTTP(w, r)
	case errors.Is(err, bulkhead.ErrBulkheadFull):
		l.cfg.reject(w, r, err)
	case r.Context().Err() != nil && errors.Is(err, r.Context().Err()):
		// The request's context ended before a grant (it was withdrawn
		// from the queue, or had ended before it got there): it holds no
		// permit. Answer the rejection: writing nothing would be net/http's
		// 200 OK to a client that may still be reading (an outer timeout,
		// a cancelled BaseContext); a gone client's answer is discarded.
		l.cfg.reject(w, r, &WithdrawnError{Name: key, Err: err})
	default:
		// No bulkhead: an unknown or invalid configuration.
		l.cfg.fail(w, r, err)
	}
}

// rejection is the default reject handler: status (503 or 429) with the
// rejection's text, and Retry-After unless retryAfter is 0.
func rejection(status int, retryAfter time.Duration) func(http.ResponseWriter, *http.Request, error) {
	header := ""
	if retryAfter > 0 {
		header = strconv.FormatInt(int64(math.Ceil(retryAfter.Seconds())), 10)
	}
	return func(w http.ResponseWriter, _ *http.Request, err error) {
		if header != "" {
			w.Header().Set("Retry-After", header)
		}
		http.Error(w, err.Error(), status)
	}
}

func internalError(w http.ResponseWriter, _ *http.Request, err error) {
	http.Error(w, err.Error(), http.StatusInternalServerError)
}
