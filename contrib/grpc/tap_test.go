package bulkheadgrpc_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	bulkheadgrpc "github.com/rxbulkhead/bulkhead/contrib/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// tapServer serves h with the tap handle and a unary and a stream
// interceptor that count the calls whose stream was created.
func tapServer(t *testing.T, reg *bulkhead.Registry, h *healthServer, streams *atomic.Int64, opts ...bulkheadgrpc.Option) string {
	t.Helper()
	in, err := bulkheadgrpc.ServerInHandle(reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, h, grpc.InTapHandle(in),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			streams.Add(1)
			return next(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, next grpc.StreamHandler) error {
			streams.Add(1)
			return next(srv, ss)
		}))
}

// Limit 1 on a real server on 127.0.0.1: while one call holds the permit,
// the next is refused by the tap handle with ResourceExhausted, before its
// stream exists (no interceptor runs for it); once the first call ends its
// permit comes back and the next call goes through.
func TestServerInHandleRejectsBeforeTheStreamIsCreated(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: waitTimeout, MaxQueuedCalls: 10})
	h := newHealthServer(true)
	var streams atomic.Int64
	c := dial(t, tapServer(t, reg, h, &streams))

	first := goCheck(context.Background(), c)
	h.awaitArrivals(t, 1)
	_, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("second call: %v, want ResourceExhausted (the tap never waits, whatever MaxWaitDuration says)", err)
	}
	if want := (&bulkhead.FullError{Name: checkMethod, Reason: bulkhead.NoWait}).Error(); !strings.Contains(status.Convert(err).Message(), want) {
		t.Errorf("rejection message %q does not name the bulkhead", status.Convert(err).Message())
	}
	if got := streams.Load(); got != 1 {
		t.Errorf("%d streams reached the interceptors, want 1: the refused call must not get a stream", got)
	}
	bh := find(t, reg, checkMethod)
	if m := bh.Metrics(); m.InFlightCalls != 1 || m.QueuedCalls != 0 {
		t.Errorf("with one call admitted: %+v", m)
	}
	h.Release()
	if err := await(t, first); err != nil {
		t.Fatal(err)
	}
	awaitMetrics(t, bh, "the first call's permit to come back", func(m bulkhead.Metrics) bool { return m.InFlightCalls == 0 })
	if _, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("a call after the permit came back: %v", err)
	}
	awaitMetrics(t, bh, "every permit back", func(m bulkhead.Metrics) bool { return m.InFlightCalls == 0 })
	if got := h.received.Load(); got != 2 {
		t.Errorf("the handler ran %d times, want 2", got)
	}
}

// A client that cancels its admitted call, unary or stream: the stream's
// context ends and the permit comes back.
func TestServerInHandleGivesThePermitBackWhenTheClientCancels(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	h := newHealthServer(true)
	var streams atomic.Int64
	c := dial(t, tapServer(t, reg, h, &streams))

	ctx, cancel := context.WithCancel(context.Background())
	held := goCheck(ctx, c)
	h.awaitArrivals(t, 1)
	cancel()
	if err := await(t, held); status.Code(err) != codes.Canceled {
		t.Fatalf("cancelled call: %v", err)
	}
	awaitMetrics(t, find(t, reg, checkMethod), "the cancelled call's permit", func(m bulkhead.Metrics) bool { return m.InFlightCalls == 0 })

	sctx, scancel := context.WithCancel(context.Background())
	defer scancel()
	w, err := c.Watch(sctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Recv(); err != nil {
		t.Fatal(err)
	}
	watch := find(t, reg, "/grpc.health.v1.Health/Watch")
	if m := watch.Metrics(); m.InFlightCalls != 1 {
		t.Errorf("an open stream: %d in flight, want 1", m.InFlightCalls)
	}
	scancel()
	awaitMetrics(t, watch, "the cancelled stream's permit", func(m bulkhead.Metrics) bool { return m.InFlightCalls == 0 })
}

// The key can come from the incoming metadata: gRPC attaches it to the
// context before it calls the handle. A call without it fails with
// codes.Internal, before its stream is created.
func TestServerInHandleKeyFromIncomingMetadata(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	h := newHealthServer(false)
	var streams atomic.Int64
	c := dial(t, tapServer(t, reg, h, &streams, bulkheadgrpc.WithKey(bulkheadgrpc.IncomingMetadata("x-tenant"))))
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-tenant", "acme")
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	awaitMetrics(t, find(t, reg, "acme"), "acme's permit", func(m bulkhead.Metrics) bool { return m.InFlightCalls == 0 })
	_, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "empty bulkhead name") {
		t.Errorf("a call without the key: %v, want Internal naming the empty key", err)
	}
	if got := streams.Load(); got != 1 {
		t.Errorf("%d streams created, want 1", got)
	}
}

func TestServerInHandleRefusesANilRegistry(t *testing.T) {
	if _, err := bulkheadgrpc.ServerInHandle(nil); err == nil || !strings.Contains(err.Error(), "ServerInHandle: registry is nil") {
		t.Errorf("err = %v", err)
	}
}

// Many clients at once, some cancelling at random points: the handler never
// runs more calls at once than the limit, every call ends admitted or
// refused, and every permit comes back (the registry's leak check).
func TestStressServerInHandleAdmitsAtMostTheLimit(t *testing.T) {
	const limit, workers, iterations = 3, 8, 60
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: limit})
	h := newHealthServer(false)
	var streams atomic.Int64
	c := dial(t, tapServer(t, reg, h, &streams))
	var refused, admitted atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range iterations {
				ctx, cancel := context.WithCancel(context.Background())
				if (w+i)%5 == 0 {
					cancel()
				}
				_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
				cancel()
				switch code := status.Code(err); code {
				case codes.OK:
					admitted.Add(1)
				case codes.ResourceExhausted:
					refused.Add(1)
				case codes.Canceled:
				default:
					t.Error(errors.New("unexpected " + code.String() + ": " + err.Error()))
				}
			}
		})
	}
	wg.Wait()
	awaitMetrics(t, find(t, reg, checkMethod), "every permit back", func(m bulkhead.Metrics) bool { return m.InFlightCalls == 0 })
	if got := h.peak.Load(); got > limit {
		t.Errorf("the handler ran %d calls at once; the limit is %d", got, limit)
	}
	if admitted.Load() == 0 {
		t.Error("no call was admitted")
	}
	t.Logf("%d admitted, %d refused", admitted.Load(), refused.Load())
}
