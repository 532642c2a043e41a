package bulkheadgrpc

import (
	"context"
	"sync/atomic"

	"github.com/rxbulkhead/bulkhead"
	"google.golang.org/grpc"
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
// The stream holds its permit until gRPC ends it (grpc.OnFinish), which is
// the first of: RecvMsg returns an error (io.EOF at the end of a server
// stream), RecvMsg returns the response of a stream whose server sends one
// message, SendMsg or Header fails, the stream's context ends (the caller
// cancels it or its deadline passes), or the ClientConn closes. These are
// the ways gRPC itself requires a stream to end; a stream left open holds
// its permit. When the stream's context ends or the ClientConn closes,
// gRPC calls OnFinish on a goroutine of its own, a moment after the cancel
// or Close returned, so a call made right after it can find the permit
// still held (with one permit, 299 or 300 times in 300 at GOMAXPROCS 1, 2
// and 4); after the cancel, a RecvMsg that returns the stream's error has
// given the permit back unless that goroutine is still running OnFinish
// (none refused in 900). If opening the stream panics or calls
// runtime.Goexit (a later interceptor's doing), the permit is given back
// and the panic goes on.
func StreamClientInterceptor(reg *bulkhead.Registry, opts ...Option) (grpc.StreamClientInterceptor, error) {
	cfg, err := newConfig("StreamClientInterceptor", reg, opts)
	if err != nil {
		return nil, err
	}
	return (&client{cfg}).stream, nil
}

func (c *client) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	class, ctx := c.cfg.clientClass(ctx)
	lease, err := c.cfg.acquire(ctx, method, cc.Target(), class)
	if err != nil {
		return err
	}
	defer lease.FinishCall()
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (c *client) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	class, ctx := c.cfg.clientClass(ctx)
	lease, err := c.cfg.acquire(ctx, method, cc.Target(), class)
	if err != nil {
		return nil, err
	}
	p := &streamPermit{lease: lease}
	// gRPC calls OnFinish once when the stream ends, whichever way: on the
	// goroutine whose RecvMsg, SendMsg or Header saw the end, or on the one
	// gRPC runs per stream to watch its context. It is not called when
	// streamer fails before the stream exists on some paths, nor when
	// streamer (a later interceptor) panics or calls runtime.Goexit: give
	// the permit back then too; the CAS keeps it to once.
	returned := false
	defer func() {
		if !returned {
			p.finish(nil)
		}
	}()
	// The full slice expression keeps append from writing into the caller's array.
	cs, err := streamer(ctx, desc, cc, method, append(opts[:len(opts):len(opts)], grpc.OnFinish(p.finish))...)
	returned = true
	if err != nil {
		p.finish(err)
		return nil, err
	}
	return cs, nil
}

// streamPermit owns the permit of one client stream; done's CAS decides
// which end of the stream gives it back.
type streamPermit struct {
	lease bulkhead.Lease
	done  atomic.Bool
}

func (p *streamPermit) finish(error) {
	if p.done.CompareAndSwap(false, true) {
		p.lease.FinishCall()
	}
}
