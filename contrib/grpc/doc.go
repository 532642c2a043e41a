// Package bulkheadgrpc puts gRPC calls behind bulkheads: unary and stream
// interceptors for clients and servers that take a permit per call from the
// bulkhead of its key in a [bulkhead.Registry] (by default the connection's
// target on a client, the full method on a server), and a server tap handle
// ([ServerInHandle]) that refuses a call before gRPC creates its stream.
//
// The rules are those of the net/http package bulkheadhttp:
//   - a call that finds its bulkhead full is not sent (client) or does not
//     reach its handler (server); it fails with codes.ResourceExhausted, and
//     the error matches bulkhead.ErrBulkheadFull on the side that rejected it;
//   - a queued call waits in the goroutine that made it (or that gRPC runs
//     for it), as a record in the bulkhead's queue, and leaves the queue when
//     its context ends;
//   - a unary call holds its permit until it returns; a stream holds it until
//     it ends (see StreamClientInterceptor for what ends a client stream);
//     a call admitted by ServerInHandle gives it back when its handler
//     returns if TapUnaryServerInterceptor and TapStreamServerInterceptor
//     are installed beside the handle, else a moment after its status was
//     sent (see there);
//   - with a Registry joined to a budget (bulkhead.WithBudget), a call gets
//     the budget class of failsafe-go's x-failsafe-priority metadata or of
//     its context (bulkhead.WithPriority), and the client sends it on
//     (WithPriorityClasses).
package bulkheadgrpc
