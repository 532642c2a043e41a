package bulkheadhttp

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// KeyFunc returns the name of the bulkhead a request belongs to: the partner
// a client request goes to, or the route, tenant or client a server request
// comes from. It must return a non-empty name. Requests go through the
// Registry's keyed path (Registry.AcquirePermission): a key taken from
// untrusted input (a header, a path) is safe once the Registry bounds its
// bulkheads with bulkhead.WithIdleTimeout and bulkhead.WithMaxBulkheads
// (keys beyond the cap share the catch-all); without them every distinct
// name is a bulkhead kept until it is removed.
type KeyFunc func(r *http.Request) string

// Host is the default key of NewTransport: the host (and port, if any) of the
// request's URL.
func Host(r *http.Request) string {
	if r.URL == nil {
		return ""
	}
	return r.URL.Host
}

// Pattern is the default key of NewMiddleware: the ServeMux pattern that
// matched the request (r.Pattern), so that every route has its own bulkhead.
// It is empty unless the middleware wraps a handler registered on a
// ServeMux; wrapping the ServeMux itself needs another key.
func Pattern(r *http.Request) string { return r.Pattern }

// Option configures NewTransport or NewMiddleware. Each option says which of
// the two reads it; giving one to the other is an error.
type Option interface {
	apply(c *config) error
}

type optionFunc func(c *config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// config is what the options set. The zero value is not used: constructors
// start from the defaults of their side.
type config struct {
	server     bool // set by NewMiddleware
	key        KeyFunc
	keyIsSet   bool // WithKey was given
	configName func(key string) string
	retryAfter time.Duration
	// rejectStatus is the status of the default rejection (503 unless
	// WithRejectStatus sets it); rejectStatusSet tells NewMiddleware that
	// it was given, which conflicts with WithRejectHandler.
	rejectStatus    int
	rejectStatusSet bool
	reject          func(w http.ResponseWriter, r *http.Request, err error)
	fail            func(w http.ResponseWriter, r *http.Request, err error)
	// priorities maps failsafe-go's priorities to budget classes
	// (WithPriorityClasses; bulkhead.DefaultPriorityClasses by default).
	priorities bulkhead.PriorityClasses
}

func newConfig(server bool, opts []Option) (*config, error) {
	c := &config{server: server, key: Host, retryAfter: time.Second, rejectStatus: http.StatusServiceUnavailable,
		priorities: bulkhead.DefaultPriorityClasses}
	if server {
		c.key = Pattern
	}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("option #%d is nil", i+1)
		}
		if err := o.apply(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// WithKey sets the function that names a request's bulkhead (both sides).
// The default is Host for NewTransport and Pattern for NewMiddleware.
func WithKey(key KeyFunc) Option {
	return optionFunc(func(c *config) error {
		if key == nil {
			return errors.New("WithKey: key function is nil")
		}
		c.key, c.keyIsSet = key, true
		return nil
	})
}

// WithConfigName sets the function that picks, for a key whose bulkhead does
// not exist yet, the name of the Registry configuration to create it from
// (both sides; see Registry.GetWithConfig). The default creates every
// bulkhead from the Registry's defaults. An existing bulkhead (for instance
// one created with Registry.Configure) is used as it is.
func WithConfigName(name func(key string) string) Option {
	return optionFunc(func(c *config) error {
		if name == nil {
			return errors.New("WithConfigName: function is nil")
		}
		c.configName = name
		return nil
	})
}

// WithRetryAfter sets the Retry-After header of the default rejection
// response of NewMiddleware, rounded up to whole seconds (default 1 s).
// Zero sends no Retry-After header. It is not a transport option.
func WithRetryAfter(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if !c.server {
			return errors.New("WithRetryAfter is an option of NewMiddleware, not of NewTransport")
		}
		if d < 0 {
			return fmt.Errorf("WithRetryAfter: duration must be >= 0, got %v", d)
		}
		c.retryAfter = d
		return nil
	})
}

// WithRejectStatus sets the status of the default rejection response of
// NewMiddleware, for a full bulkhead and for a withdrawn request alike:
// http.StatusServiceUnavailable (503, the default) or
// http.StatusTooManyRequests (429); any other value is an error. The
// Retry-After header (WithRetryAfter) and the body, the rejection's text,
// stay the same. It is not a transport option, and it cannot be combined
// with WithRejectHandler, whose handler writes its own status.
//
// Why 503 by default: the default key is the route (Pattern), so a full
// bulkhead means the server has no capacity left for that route whoever
// asks, which is what 503 says (the server is temporarily overloaded, RFC
// 9110 section 15.6.4), and proxies and load balancers take it as "try
// another instance". 429 (RFC 6585) says that this client sent too many
// requests: choose it when the key names the client or tenant (WithKey), so
// that the tenant over its share is told to slow down while the server
// stays open to the others.
func WithRejectStatus(code int) Option {
	return optionFunc(func(c *config) error {
		if !c.server {
			return errors.New("WithRejectStatus is an option of NewMiddleware, not of NewTransport")
		}
		if code != http.StatusServiceUnavailable && code != http.StatusTooManyRequests {
			return fmt.Errorf("WithRejectStatus: status must be 503 (Service Unavailable) or 429 (Too Many Requests), got %d", code)
		}
		c.rejectStatus, c.rejectStatusSet = code, true
		return nil
	})
}

// WithRejectHandler replaces the response NewMiddleware writes when a
// request gets no permit (default: 503 Service Unavailable with
// Retry-After); the wrapped handler does not run. f receives the rejection:
// a *bulkhead.FullError (matching bulkhead.ErrBulkheadFull, naming the
// bulkhead) when the bulkhead is full, or a *WithdrawnError (matching
// bulkhead.ErrCancelled and the context's error) when the request's context
// ended while it waited. f must write a status or a body: a handler that
// writes nothing leaves net/http's implicit 200 OK. It is not a transport
// option.
func WithRejectHandler(f func(w http.ResponseWriter, r *http.Request, err error)) Option {
	return optionFunc(func(c *config) error {
		if !c.server {
			return errors.New("WithRejectHandler is an option of NewMiddleware, not of NewTransport")
		}
		if f == nil {
			return errors.New("WithRejectHandler: handler is nil")
		}
		c.reject = f
		return nil
	})
}

// WithErrorHandler replaces the response NewMiddleware writes when a
// request's bulkhead cannot be had: the key function returned "", or the
// bulkhead could not be created (an unknown or invalid configuration). The
// default answers 500 Internal Server Error with the error's text; the
// wrapped handler does not run. It is not a transport option.
func WithErrorHandler(f func(w http.ResponseWriter, r *http.Request, err error)) Option {
	return optionFunc(func(c *config) error {
		if !c.server {
			return errors.New("WithErrorHandler is an option of NewMiddleware, not of NewTransport")
		}
		if f == nil {
			return errors.New("WithErrorHandler: handler is nil")
		}
		c.fail = f
		return nil
	})
}

// keyFor returns the key of r, or a *KeyError for "": the one error path
// shared by both sides, so a bad key reads the same everywhere.
func (c *config) keyFor(r *http.Request) (string, error) {
	key := c.key(r)
	if key == "" {
		ke := &KeyError{Method: r.Method}
		if r.URL != nil {
			ke.URL = r.URL.Redacted()
		}
		if c.server && !c.keyIsSet {
			ke.Hint = "the default key is the ServeMux pattern that matched (Pattern): wrap each handler registered on the mux, or give WithKey"
		}
		return "", ke
	}
	return key, nil
}

// callOptions are the options of key's keyed call: the configuration
// name of key's bulkhead if it has to be created ("": the Registry's
// choice) and the call's budget class ("": its partner's).
func (c *config) callOptions(key, class string) bulkhead.CallOptions {
	if c.configName == nil {
		return bulkhead.CallOptions{Class: class}
	}
	return bulkhead.CallOptions{ConfigName: c.configName(key), Class: class}
}

// WithPriorityClasses sets how failsafe-go's priority header
// (bulkhead.PriorityHeader, or bulkhead.LevelHeader) maps to the classes of
// the Registry's budget (bulkhead.WithBudget), both ways (default
// bulkhead.DefaultPriorityClasses). The middleware reads a request's
// header, gives the call that class and puts it in the request's context
// (bulkhead.WithPriority) for the handler's own calls; the Transport takes
// the class from the request's context (or, if it carries none, from a
// header the caller set) and sends the header to the next hop unless the
// request has one. A value that is not a priority, or an unmapped one, is
// ignored: the call gets its partner's class. The zero PriorityClasses
// turns the header off both ways. Both sides.
func WithPriorityClasses(m bulkhead.PriorityClasses) Option {
	return optionFunc(func(c *config) error {
		c.priorities = m
		return nil
	})
}

// headerClass is the class of a request's failsafe-go header, or "".
func (c *config) headerClass(h http.Header) string {
	if v := h.Get(bulkhead.PriorityHeader); v != "" {
		return c.priorities.Class(v)
	}
	if v := h.Get(bulkhead.LevelHeader); v != "" {
		return c.priorities.ClassOfLevel(v)
	}
	return ""
}

// clientClass is the class of an outgoing request: its context's, or its
// header's.
func (c *config) clientClass(req *http.Request) string {
	if class := bulkhead.PriorityFrom(req.Context()); class != "" {
		return class
	}
	if c.priorities == (bulkhead.PriorityClasses{}) {
		return ""
	}
	return c.headerClass(req.Header)
}

// withPriorityHeader returns req, or a shallow copy of it with the
// failsafe-go header of class if the request has none and class maps to a
// priority (a RoundTripper must not change the caller's request).
func (c *config) withPriorityHeader(req *http.Request, class string) *http.Request {
	v := c.priorities.Value(class)
	if v == "" || req.Header.Get(bulkhead.PriorityHeader) != "" {
		return req
	}
	r2 := new(http.Request)
	*r2 = *req
	r2.Header = req.Header.Clone()
	if r2.Header == nil {
		r2.Header = http.Header{}
	}
	r2.Header.Set(bulkhead.PriorityHeader, v)
	return r2
}

// KeyError is the error of a request whose key function returned "".
type KeyError struct {
	Method, URL string
	Hint        string // what to do about it, if known; may be empty
}

// Error says which request had no key, and the hint if there is one.
func (e *KeyError) Error() string {
	msg := fmt.Sprintf("bulkheadhttp: the key function returned an empty bulkhead name for %s %s", e.Method, e.URL)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}
