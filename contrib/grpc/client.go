package bulkheadgrpc

import (
	"context"
	"sync/atomic"

	"github.com/rxbulkhead/bulkhead"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

type client struct{ cfg *config }

// UnaryClientInterceptor returns an interceptor that sends each unary call
// once its bulkhead grants a permit, and gives the permit back (FinishCall)
// when the call returns. A call is not sent when its bulkhead rejects it
// (codes.ResourceExhausted; the error matches bulkhead.ErrBulkheadFull and
// names the bulkhead), its context ends while it waits (codes.Canceled or
// DeadlineExceeded), or its bulkhead cannot be had (codes.Internal: an empty
// key, an unknown or invalid configuration). It fails if reg is nil or an
// option is invalid.
func UnaryClientInterceptor(reg *bulkhead.Registry, opts ...Option) (grpc.UnaryClientInterceptor, error) {
	cfg, err := newConfig("UnaryClientInterceptor", reg, opts)
	if err != nil {
		return nil, err
	}
	return (&client{cfg}).unary, nil
}

// StreamClientInterceptor returns an interceptor that opens each stream once
// its bulkhead grants a permit, with the rules of UnaryClientInterceptor.
// The stream holds its permit until it ends, which is the first of: RecvMsg
// returns an error (io.EOF at the end of a server stream), RecvMsg returns
// the response of a stream whose server sends one message, SendMsg or
// Header fails, or the stream's context ends (the caller cancels it, its
// deadline passes, or the connection closes). These are the ways gRPC
// itself requires a stream to end; a stream left open holds its permit.
func StreamClientInterceptor(reg *bulkhead.Registry, opts ...Option) (grpc.StreamClientInterceptor, error) {
	cfg, err := newConfig("StreamClientInterceptor", reg, opts)
	if err != nil {
		return nil, err
	}
	return (&client{cfg}).stream, nil
}

func (c *client) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	bh, err := c.cfg.acquire(ctx, method, cc.Target())
	if err != nil {
		return err
	}
	defer bh.FinishCall()
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (c *client) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	bh, err := c.cfg.acquire(ctx, method, cc.Target())
	if err != nil {
		return nil, err
	}
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		bh.FinishCall()
		return nil, err
	}
	s := &clientStream{ClientStream: cs, unaryResponse: !desc.ServerStreams, bh: bh}
	// AfterFunc starts no goroutine until the context ends; gRPC cancels
	// the stream's context when the stream finishes in any way.
	s.stop = context.AfterFunc(cs.Context(), s.finish)
	return s, nil
}

// clientStream owns the permit of one stream; done's CAS decides which of
// the ways a stream ends gives it back.
type clientStream struct {
	grpc.ClientStream
	unaryResponse bool // the server sends one message
	bh            *bulkhead.Semaphore
	stop          func() bool
	done          atomic.Bool
}

func (s *clientStream) finish() {
	if s.done.CompareAndSwap(false, true) {
		s.bh.FinishCall()
		if s.stop != nil {
			s.stop()
		}
	}
}

func (s *clientStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil || s.unaryResponse {
		s.finish()
	}
	return err
}

func (s *clientStream) Header() (metadata.MD, error) {
	md, err := s.ClientStream.Header()
	if err != nil {
		s.finish()
	}
	return md, err
}

func (s *clientStream) SendMsg(m any) error {
	err := s.ClientStream.SendMsg(m)
	if err != nil {
		// io.EOF means the stream ended on the server: its status comes
		// from RecvMsg, which ends it here too; any other error ends it.
		s.finish()
	}
	return err
}
