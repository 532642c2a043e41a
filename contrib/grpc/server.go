package bulkheadgrpc

import (
	"context"

	"github.com/rxbulkhead/bulkhead"
	"google.golang.org/grpc"
)

type server struct{ cfg *config }

// UnaryServerInterceptor returns an interceptor that runs each unary handler
// once the call's bulkhead (by default one per full method) grants a permit,
// and gives it back (FinishCall) when the handler returns. A call that finds
// the bulkhead full fails with codes.ResourceExhausted before the handler
// runs; one whose context ends while it waits (the client cancelled, its
// deadline passed) leaves the queue, holds no permit and fails with
// codes.Canceled or DeadlineExceeded; one without a bulkhead (an empty key,
// an unknown or invalid configuration) fails with codes.Internal. It fails
// if reg is nil or an option is invalid.
func UnaryServerInterceptor(reg *bulkhead.Registry, opts ...Option) (grpc.UnaryServerInterceptor, error) {
	cfg, err := newConfig("UnaryServerInterceptor", reg, opts)
	if err != nil {
		return nil, err
	}
	return (&server{cfg}).unary, nil
}

// StreamServerInterceptor returns an interceptor that runs each stream
// handler once its bulkhead grants a permit, with the rules of
// UnaryServerInterceptor. The stream holds its permit until the handler
// returns, which ends the stream.
func StreamServerInterceptor(reg *bulkhead.Registry, opts ...Option) (grpc.StreamServerInterceptor, error) {
	cfg, err := newConfig("StreamServerInterceptor", reg, opts)
	if err != nil {
		return nil, err
	}
	return (&server{cfg}).stream, nil
}

func (s *server) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	class, ctx := s.cfg.serverClass(ctx)
	lease, err := s.cfg.acquire(ctx, info.FullMethod, "", class)
	if err != nil {
		return nil, err
	}
	defer lease.FinishCall()
	return handler(ctx, req)
}

func (s *server) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	class, ctx := s.cfg.serverClass(ss.Context())
	lease, err := s.cfg.acquire(ctx, info.FullMethod, "", class)
	if err != nil {
		return err
	}
	defer lease.FinishCall()
	if ctx != ss.Context() {
		ss = &classStream{ServerStream: ss, ctx: ctx}
	}
	return handler(srv, ss)
}

// classStream is a server stream whose context carries the class its
// metadata named (bulkhead.WithPriority).
type classStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *classStream) Context() context.Context { return s.ctx }

var (
	_ grpc.UnaryServerInterceptor  = (&server{}).unary
	_ grpc.StreamServerInterceptor = (&server{}).stream
)
