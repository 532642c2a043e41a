package bulkheadgrpc

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rxbulkhead/bulkhead"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// KeyFunc returns the name of the bulkhead of a call to (client) or of
// (server) the full method "/package.Service/Method". It must return a
// non-empty name. Calls go through the Registry's keyed path
// (Registry.AcquirePermission): a key taken from metadata a peer sends is
// safe once the Registry bounds its bulkheads with bulkhead.WithIdleTimeout
// and bulkhead.WithMaxBulkheads (keys beyond the cap share the catch-all);
// without them every distinct name is a bulkhead kept until it is removed.
type KeyFunc func(ctx context.Context, fullMethod string) string

// Method is the default server key: the full method, one bulkhead per RPC.
func Method(_ context.Context, fullMethod string) string { return fullMethod }

// Service keys a call by its service, "package.Service".
func Service(_ context.Context, fullMethod string) string {
	s := strings.TrimPrefix(fullMethod, "/")
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[:i]
	}
	return s
}

// OutgoingMetadata keys a client call by the first value of the outgoing
// metadata name (such as "x-partner"); calls without it get "" and fail.
func OutgoingMetadata(name string) KeyFunc {
	return func(ctx context.Context, _ string) string {
		if v := metadata.ValueFromOutgoingContext(ctx, name); len(v) > 0 {
			return v[0]
		}
		return ""
	}
}

// IncomingMetadata keys a server call by the first value of the incoming
// metadata name (such as "x-tenant"); calls without it get "" and fail.
func IncomingMetadata(name string) KeyFunc {
	return func(ctx context.Context, _ string) string {
		if v := metadata.ValueFromIncomingContext(ctx, name); len(v) > 0 {
			return v[0]
		}
		return ""
	}
}

// Option configures an interceptor.
type Option interface{ apply(c *config) error }

type optionFunc func(c *config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// WithKey sets the function that names a call's bulkhead. The default is the
// connection's target (cc.Target()) on a client and Method on a server.
func WithKey(key KeyFunc) Option {
	return optionFunc(func(c *config) error {
		if key == nil {
			return errors.New("WithKey: key function is nil")
		}
		c.key = key
		return nil
	})
}

// WithConfigName sets the function that picks, for a key whose bulkhead does
// not exist yet, the Registry configuration to create it from (see
// Registry.GetWithConfig). By default bulkheads use the Registry's defaults.
func WithConfigName(name func(key string) string) Option {
	return optionFunc(func(c *config) error {
		if name == nil {
			return errors.New("WithConfigName: function is nil")
		}
		c.configName = name
		return nil
	})
}

// WithPriorityClasses sets how failsafe-go's priority metadata
// (bulkhead.PriorityMetadataKey, or bulkhead.LevelMetadataKey) maps to the
// classes of the Registry's budget (bulkhead.WithBudget), both ways
// (default bulkhead.DefaultPriorityClasses). The server interceptors and
// the tap read a call's metadata, give the call that class and put it in
// the handler's context (bulkhead.WithPriority) for its own calls; the
// client interceptors take the class from the context (or, if it carries
// none, from outgoing metadata the caller set) and send the metadata to
// the server unless the call has it. A value that is not a priority, or an
// unmapped one, is ignored: the call gets its partner's class. The zero
// PriorityClasses turns the metadata off both ways.
func WithPriorityClasses(m bulkhead.PriorityClasses) Option {
	return optionFunc(func(c *config) error {
		c.priorities = m
		return nil
	})
}

type config struct {
	reg        *bulkhead.Registry
	key        KeyFunc // nil on a client: the target
	configName func(key string) string
	priorities bulkhead.PriorityClasses
}

// metadataClass is the class of failsafe-go's metadata in md, or "".
func (c *config) metadataClass(md metadata.MD) string {
	if v := md.Get(bulkhead.PriorityMetadataKey); len(v) > 0 {
		return c.priorities.Class(v[0])
	}
	if v := md.Get(bulkhead.LevelMetadataKey); len(v) > 0 {
		return c.priorities.ClassOfLevel(v[0])
	}
	return ""
}

// serverClass is the class of an incoming call: its metadata's, else its
// context's; and the context for the handler, carrying that class.
func (c *config) serverClass(ctx context.Context) (string, context.Context) {
	if c.priorities != (bulkhead.PriorityClasses{}) {
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			if class := c.metadataClass(md); class != "" {
				if class != bulkhead.PriorityFrom(ctx) {
					ctx = bulkhead.WithPriority(ctx, class)
				}
				return class, ctx
			}
		}
	}
	return bulkhead.PriorityFrom(ctx), ctx
}

// clientClass is the class of an outgoing call: its context's, else its
// outgoing metadata's; and the context to invoke with, carrying the
// metadata of that class if the call has none and the class maps to a
// priority.
func (c *config) clientClass(ctx context.Context) (string, context.Context) {
	md, _ := metadata.FromOutgoingContext(ctx)
	class := bulkhead.PriorityFrom(ctx)
	if class == "" {
		if c.priorities != (bulkhead.PriorityClasses{}) {
			class = c.metadataClass(md)
		}
		return class, ctx
	}
	if v := c.priorities.Value(class); v != "" && len(md.Get(bulkhead.PriorityMetadataKey)) == 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, bulkhead.PriorityMetadataKey, v)
	}
	return class, ctx
}

func newConfig(who string, reg *bulkhead.Registry, opts []Option) (*config, error) {
	if reg == nil {
		return nil, fmt.Errorf("bulkheadgrpc: %s: registry is nil", who)
	}
	c := &config{reg: reg, priorities: bulkhead.DefaultPriorityClasses}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("bulkheadgrpc: %s: option #%d is nil", who, i+1)
		}
		if err := o.apply(c); err != nil {
			return nil, fmt.Errorf("bulkheadgrpc: %s: %w", who, err)
		}
	}
	return c, nil
}

// acquire takes a permit for the call in the calling goroutine, through
// the keyed path: on success the caller owns one permit and the Lease's
// hold on its bulkhead (not evicted until the Lease gives the permit
// back). target is the client connection's target ("" on a server). Every
// failure is a gRPC status error that unwraps to its cause.
func (c *config) acquire(ctx context.Context, fullMethod, target, class string) (bulkhead.Lease, error) {
	key, err := c.keyFor(ctx, fullMethod, target)
	if err != nil {
		return bulkhead.Lease{}, err
	}
	lease, err := c.reg.AcquirePermission(ctx, key, c.callOptions(key, class))
	if err != nil {
		return bulkhead.Lease{}, c.statusOf(ctx, err)
	}
	return lease, nil
}

// tryAcquire is acquire without a wait (Registry.TryAcquirePermission).
func (c *config) tryAcquire(ctx context.Context, fullMethod, class string) (bulkhead.Lease, error) {
	key, err := c.keyFor(ctx, fullMethod, "")
	if err != nil {
		return bulkhead.Lease{}, err
	}
	lease, err := c.reg.TryAcquirePermission(key, c.callOptions(key, class))
	if err != nil {
		return bulkhead.Lease{}, c.statusOf(ctx, err)
	}
	return lease, nil
}

// statusOf maps a keyed acquire's error to its status: ResourceExhausted
// for a full bulkhead, the context's code for a withdrawn call, Internal
// for an unknown or invalid configuration.
func (c *config) statusOf(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, bulkhead.ErrBulkheadFull):
		return &statusError{code: codes.ResourceExhausted, err: err}
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return &statusError{code: status.FromContextError(err).Code(), err: err}
	default:
		return &statusError{code: codes.Internal, err: err}
	}
}

// keyFor returns the key of a call, or a codes.Internal status error for
// an empty key.
func (c *config) keyFor(ctx context.Context, fullMethod, target string) (string, error) {
	var key string
	switch {
	case c.key != nil:
		key = c.key(ctx, fullMethod)
	case target != "":
		key = target
	default:
		key = fullMethod
	}
	if key == "" {
		return "", &statusError{code: codes.Internal, err: fmt.Errorf("bulkheadgrpc: the key function returned an empty bulkhead name for %s", fullMethod)}
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

// statusError is a gRPC status that keeps its cause for errors.Is and
// errors.As: a rejection matches bulkhead.ErrBulkheadFull and is a
// *bulkhead.FullError, a withdrawn call matches its context's error.
type statusError struct {
	code codes.Code
	err  error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// GRPCStatus is what status.FromError and status.Code read.
func (e *statusError) GRPCStatus() *status.Status { return status.New(e.code, e.err.Error()) }
