package bulkheadgrpc

import (
	"context"

	"github.com/rxbulkhead/bulkhead"
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
// at GOMAXPROCS 2 and 4, none at 1, on a loaded two-core machine). Leave
// that slack in the limit, or use the server interceptors, which give the
// permit back when the handler returns, before the status is sent.
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
	// The stream's context owns the permit and the Lease's hold from here.
	// (The func captures the Lease by value: one allocation with the
	// closure, where the method value lease.FinishCall would also move
	// lease to the heap.)
	context.AfterFunc(ctx, func() {
		l := lease
		l.FinishCall()
	})
	return ctx, nil
}
