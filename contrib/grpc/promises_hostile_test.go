package bulkheadgrpc_test

// The tests in this file try the promises of the interceptors' doc comments
// the way a hostile caller would: one permit, no queue, and calls made back
// to back (each one as soon as the previous returned), a context that ended
// before the call on a full bulkhead, and a later interceptor that ends the
// stream itself before failing.

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	bulkheadgrpc "github.com/rxbulkhead/bulkhead/contrib/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// backToBack is how many calls the back-to-back tests make: enough that a
// permit given back after the caller saw the call end (rather than before)
// shows up as a refusal (about 1 in 100 calls on two cores, measured for
// ServerInHandle, whose permit does come back after the status is sent).
const backToBack = 500

// Promise: the server interceptors give the permit back "when the handler
// returns" (a stream: "until the handler returns, which ends the stream"),
// which is before gRPC sends the call's status; the client interceptors
// give it back before the call returns to the caller (a stream: RecvMsg's
// io.EOF); ServerInHandle's Tap interceptors give its permit back when the
// handler returns. So a client that makes its calls one at a time, each as
// soon as the previous one returned, is never refused by a bulkhead of one
// permit without a queue, on either side.
func TestHostileBackToBackCallsOnOnePermitAreNeverRefused(t *testing.T) {
	for _, side := range []string{"server interceptors", "client interceptors", "tap handle and its interceptors"} {
		t.Run(side, func(t *testing.T) {
			reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
			h := newHealthServer(false)
			var c healthpb.HealthClient
			switch side {
			case "server interceptors":
				c = dial(t, limitedServer(t, reg, h))
			case "client interceptors":
				c = limitedClient(t, reg, serve(t, h))
			default:
				// both owners of a tap permit give it back on every call
				// (the interceptor, then the context's end): a second
				// FinishCall would show in the registry's leak check
				in, err := bulkheadgrpc.ServerInHandle(reg)
				if err != nil {
					t.Fatal(err)
				}
				c = dial(t, serve(t, h, grpc.InTapHandle(in),
					grpc.ChainUnaryInterceptor(bulkheadgrpc.TapUnaryServerInterceptor()),
					grpc.ChainStreamInterceptor(bulkheadgrpc.TapStreamServerInterceptor())))
			}
			for i := range backToBack {
				if _, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
					t.Fatalf("unary call %d: %v", i, err)
				}
				<-h.arrived
			}
			for i := range backToBack / 10 {
				w, err := c.Watch(context.Background(), &healthpb.HealthCheckRequest{})
				if err != nil {
					t.Fatalf("stream %d: %v", i, err)
				}
				if _, err := w.Recv(); err != nil {
					t.Fatalf("stream %d: %v", i, err)
				}
				if _, err := w.Recv(); err != io.EOF {
					t.Fatalf("stream %d: end %v, want io.EOF", i, err)
				}
				<-h.arrived
			}
		})
	}
}

// Promise (UnaryClientInterceptor): a call whose context ends while it
// waits is not sent and fails with codes.Canceled. One whose context had
// ended before it was made, on a full bulkhead without a queue that would
// refuse it with ResourceExhausted, must get Canceled too, and the bulkhead
// must not count a rejection.
func TestHostileClientCallWithAnEndedContextOnAFullBulkhead(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	h := newHealthServer(false)
	addr := serve(t, h)
	c := limitedClient(t, reg, addr)
	held, err := reg.AcquirePermission(context.Background(), addr, bulkhead.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.FinishCall()
	var rejected int
	t.Cleanup(reg.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallRejected {
			rejected++
		}
	}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Check(ctx, &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Canceled {
		t.Fatalf("call with an ended context: %v, want Canceled", err)
	}
	if _, err := c.Watch(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Canceled {
		t.Fatalf("stream with an ended context: %v, want Canceled", err)
	}
	if rejected != 0 || h.received.Load() != 0 {
		t.Fatalf("%d rejections, %d calls received; want none", rejected, h.received.Load())
	}
}

// Promise (StreamClientInterceptor): the permit is given back once,
// whichever end of the stream comes first, also when opening it fails. A
// later interceptor that ends the stream itself (it calls the OnFinish of
// the options it was given, as gRPC does on some failure paths) and then
// fails must not make the permit come back twice (a Lease given back twice
// panics) nor keep it. The caller's options must not be written to either:
// the interceptor appends its OnFinish to a slice with room to spare.
func TestHostileStreamClientOpeningThatFinishesThenFailsGivesThePermitBackOnce(t *testing.T) {
	cc, err := grpc.NewClient("127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	finished := 0
	t.Cleanup(reg.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallFinished {
			finished++
		}
	}))
	i, err := bulkheadgrpc.StreamClientInterceptor(reg, bulkheadgrpc.WithKey(func(context.Context, string) string { return "walmart" }))
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("later interceptor failed")
	callerOpts := make([]grpc.CallOption, 1, 4)
	callerOpts[0] = grpc.WaitForReady(false)
	for range 3 { // one permit: each attempt must have given it back
		_, err := i(context.Background(), &grpc.StreamDesc{}, cc, "/m", func(_ context.Context, _ *grpc.StreamDesc, _ *grpc.ClientConn, _ string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			for _, o := range opts {
				if f, ok := o.(grpc.OnFinishCallOption); ok {
					f.OnFinish(boom)
					f.OnFinish(boom) // gRPC promises once; a later interceptor may not
				}
			}
			return nil, boom
		}, callerOpts...)
		if !errors.Is(err, boom) {
			t.Fatalf("opening: %v, want the later interceptor's error", err)
		}
	}
	if finished != 3 {
		t.Fatalf("%d CallFinished for 3 streams, want 3", finished)
	}
	if spare := callerOpts[:2][1]; spare != nil {
		t.Fatalf("the interceptor wrote %T into the caller's options array", spare)
	}
}

// Promise (ServerInHandle): an admitted call "holds its permit until its
// stream's context ends, which gRPC does once the call's status is sent".
// A call the tap admits but gRPC cannot serve (a method the server does
// not have: Unimplemented, sent without any handler) must still give its
// permit back, so the next call is admitted.
func TestHostileServerInHandleGivesBackThePermitOfAnUnknownMethod(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	var streams atomic.Int64
	addr := tapServer(t, reg, newHealthServer(false), &streams)
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	const unknown = "/no.Such/Method"
	for i := range 3 {
		err := cc.Invoke(context.Background(), unknown, &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{})
		if status.Code(err) != codes.Unimplemented {
			t.Fatalf("call %d: %v, want Unimplemented (not ResourceExhausted: the permit of the previous call came back)", i, err)
		}
		awaitMetrics(t, find(t, reg, unknown), "the permit to come back", func(m bulkhead.Metrics) bool { return m.InFlightCalls == 0 })
	}
	if n := streams.Load(); n != 0 {
		t.Fatalf("%d calls reached an interceptor", n)
	}
}

// Promise (TapUnaryServerInterceptor, TapStreamServerInterceptor): the
// permit ServerInHandle took comes back when the handler returns, before
// gRPC sends the status. An interceptor chained outside them sees it free
// as soon as the handler chain returned to it, on every call; without them
// it would see it held (it comes back only when the stream's context ends,
// after the status is sent).
func TestHostileTapInterceptorsGiveThePermitBackBeforeTheStatusIsSent(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	h := newHealthServer(false)
	in, err := bulkheadgrpc.ServerInHandle(reg)
	if err != nil {
		t.Fatal(err)
	}
	var held atomic.Int64 // calls whose permit was still held after the handler returned
	inFlight := func(method string) int64 { return int64(find(t, reg, method).Metrics().InFlightCalls) }
	c := dial(t, serve(t, h, grpc.InTapHandle(in),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			defer func() { held.Add(inFlight(info.FullMethod)) }()
			return next(ctx, req)
		}, bulkheadgrpc.TapUnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, next grpc.StreamHandler) error {
			defer func() { held.Add(inFlight(info.FullMethod)) }()
			return next(srv, ss)
		}, bulkheadgrpc.TapStreamServerInterceptor())))
	const calls = 20
	for i := range calls {
		if _, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("unary call %d: %v", i, err)
		}
		<-h.arrived
		w, err := c.Watch(context.Background(), &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		if _, err := w.Recv(); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		if _, err := w.Recv(); err != io.EOF {
			t.Fatalf("stream %d: end %v, want io.EOF", i, err)
		}
		<-h.arrived
	}
	if n := held.Load(); n != 0 {
		t.Errorf("%d of %d calls still held their permit when the handler chain returned, want 0", n, 2*calls)
	}
}
