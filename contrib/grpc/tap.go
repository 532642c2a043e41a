package bulkheadgrpc

import (
	"context"
	"sync/atomic"

	"github.com/rxbulkhead/bulkhead"
	"google.golang.org/grpc"
	"google.golang.org/grpc/tap"
)

// ServerInHandle returns a tap handle (install it with grpc.InTapHandle)
// that takes each call's permit before gRPC creates the server stream, so
// a call that finds its bulkhead full costs no stream, no goroutine and no
// decoding: the client receives codes.ResourceExhausted with the text of
// the *bulkhead.FullError, and no interceptor or handler runs. The key is
// Method by default, as for UnaryServerInterceptor; IncomingMetadata works
// too (gRPC attaches the metadata before it calls the handle). A call
// without a bulkhead fails with codes.Internal. It fails if reg is nil or
// an option is invalid.
//
// The handle never waits: gRPC runs it on the connection's reading
// goroutine, which must not block, so a bulkhead with a MaxWaitDuration
// still refuses a call at once (Reason NoWait) unless a permit is free and
// nobody waits for one (TryAcquirePermission). Use the interceptors for calls that should
// queue for a permit, not both on the same registry and key: a call would
// then take two permits.
//
// Permit ownership: a call admitted by the handle holds its permit until
// its stream's context ends, which gRPC does once the call's status is
// sent, the client resets the stream, or the connection closes. A
// context.AfterFunc registered on that context gives the permit back
// (FinishCall), exactly once, on a goroutine of its own. So the permit
// comes back a moment after the status has left, and the client may see
// its call end first: a client that sends its next call as soon as the
// previous one returned can find that permit still held and be refused
// (with MaxConcurrentCalls 1, up to 200 of 3000 back-to-back unary calls
// at GOMAXPROCS 2 and 4, none at 1, on a loaded two-core machine). Install
// TapUnaryServerInterceptor and TapStreamServerInterceptor beside the
// handle to have the permit back when the handler returns, before the
// status is sent; the context's end still gives it back for a call whose
// handler never runs (an unknown method, a stream refused later).
//
// Because gRPC does not end the context of a stream refused by a tap
// handle, put this one last if you chain several: a handle after it that
// refuses the stream would leave the permit held until the connection
// closes.
//
// tap is an experimental package of grpc-go.
func ServerInHandle(reg *bulkhead.Registry, opts ...Option) (tap.ServerInHandle, error) {
	cfg, err := newConfig("ServerInHandle", reg, opts)
	if err != nil {
		return nil, err
	}
	return cfg.admit, nil
}

// admit is the tap handle: one TryAcquirePermission, and the permit tied to
// the stream's context.
func (c *config) admit(ctx context.Context, info *tap.Info) (context.Context, error) {
	var class string
	if c.priorities != (bulkhead.PriorityClasses{}) {
		class = c.metadataClass(info.Header)
	}
	if class == "" {
		class = bulkhead.PriorityFrom(ctx)
	} else if class != bulkhead.PriorityFrom(ctx) {
		ctx = bulkhead.WithPriority(ctx, class) // the handler's context
	}
	lease, err := c.tryAcquire(ctx, info.FullMethodName, class)
	if err != nil {
		return nil, err
	}
	p := &tapPermit{Context: ctx, lease: lease}
	p.outer, _ = ctx.Value(tapPermitKey{}).(*tapPermit)
	// From here the permit has two owners, and the first to call release
	// gives it back: the stream's context ending (AfterFunc, on a goroutine
	// of its own) or a Tap interceptor when the handler returns.
	context.AfterFunc(ctx, p.release)
	return p, nil
}

// tapPermitKey is the context key under which a call admitted by
// ServerInHandle finds its tapPermit.
type tapPermitKey struct{}

// tapPermit is the permit ServerInHandle took for one call, and the
// context gRPC gives the call's stream (the handle's context with the
// permit as a value, found without another allocation). The CAS on done
// decides which of its two owners gives it back, exactly once.
type tapPermit struct {
	context.Context
	lease bulkhead.Lease
	done  atomic.Bool
	outer *tapPermit // the permit of a ServerInHandle chained before this one
}

func (p *tapPermit) Value(key any) any {
	if key == (tapPermitKey{}) {
		return p
	}
	return p.Context.Value(key)
}

func (p *tapPermit) release() {
	if p.done.CompareAndSwap(false, true) {
		p.lease.FinishCall()
	}
}

// releaseTapPermits gives back, at once, the permits the ServerInHandle
// handles took for the call whose context is ctx (none if no handle
// admitted it).
func releaseTapPermits(ctx context.Context) {
	for p, _ := ctx.Value(tapPermitKey{}).(*tapPermit); p != nil; p = p.outer {
		p.release()
	}
}

// TapUnaryServerInterceptor returns the unary server interceptor that
// gives back the permit ServerInHandle took for a call as soon as its
// handler returns (or panics), before gRPC sends the call's status, as
// UnaryServerInterceptor does for its own permits: a client that sends its
// next call as soon as the previous one returned then finds the permit
// free. It takes no permit; a call the handle did not admit passes through
// untouched. Install it with grpc.ChainUnaryInterceptor beside the handle
// (grpc.InTapHandle).
func TapUnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		defer releaseTapPermits(ctx)
		return handler(ctx, req)
	}
}

// TapStreamServerInterceptor is TapUnaryServerInterceptor for streams: the
// permit comes back when the stream's handler returns, which ends the
// stream, before its status is sent.
func TapStreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		defer releaseTapPermits(ss.Context())
		return handler(srv, ss)
	}
}
